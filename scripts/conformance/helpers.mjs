// Shared helpers for the conformance suite: every test gets its own sandbox
// and kills it afterwards, so files run in parallel without meeting.
import { Sandbox } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'

export const TEMPLATE_BASE = 'base'
export const TEMPLATE_CI = 'code-interpreter-v1'

// withSandbox creates a sandbox of the given kind, runs fn with it and kills it.
export async function withSandbox(fn, { kind = 'base', ...opts } = {}) {
  const sbx = kind === 'code'
    ? await CodeSandbox.create(TEMPLATE_CI, { timeoutMs: 120_000, ...opts })
    : await Sandbox.create(TEMPLATE_BASE, { timeoutMs: 120_000, ...opts })
  try {
    return await fn(sbx)
  } finally {
    await sbx.kill().catch(() => {})
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

// waitFor polls cond until it returns a truthy value or the time runs out.
export async function waitFor(cond, { timeoutMs = 10_000, intervalMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await sleep(intervalMs)
  }
}
