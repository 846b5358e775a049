/**
 * A variable of the process environment, or undefined where there is none
 * (browsers, workers) or it is empty. The SDK reads SESSIONBOX_URL and
 * SESSIONBOX_API_KEY through it, as E2B's SDK reads E2B_API_KEY.
 */
export function envVar(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = proc?.env?.[name];
  return v ? v : undefined;
}
