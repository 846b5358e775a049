// The differential scenario, through the official E2B SDKs (npm e2b and
// @e2b/code-interpreter). pkg/e2b's TestDifferentialJSSDK runs it against a
// recording proxy in front of the local runtime, runs the same scenario
// through the Go client, and compares the requests. Before each step it
// sends GET <E2B_API_URL>/__step?name=<step>, which the proxy answers
// itself, so both recordings are cut into the same steps. Every step here
// has a twin in the Go test (differentialScenario); change them together.
// The SDK knows only E2B's newest control plane; TestDifferentialOldAPI runs
// the Go twin against the runtime's older ones (e2blocal.Config.OldAPI),
// where only the create and connect requests may differ.
import { Sandbox } from '@e2b/code-interpreter'

const api = process.env.E2B_API_URL
const step = async (name) => {
  const r = await fetch(`${api}/__step?name=${encodeURIComponent(name)}`)
  if (r.status !== 204) throw new Error(`step marker ${name}: ${r.status}`)
}
const expect = (what, got, want) => {
  if (got !== want) throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
}

const metadata = { suite: 'differential', side: 'both' }

await step('create')
const sbx = await Sandbox.create('code-interpreter-v1', {
  metadata, envs: { GLOBAL: 'g' }, timeoutMs: 600_000,
})

await step('command with envs and cwd')
const run = await sbx.commands.run('echo "$GLOBAL $LOCAL $(pwd)"', { envs: { LOCAL: 'l' }, cwd: '/tmp' })
expect('command stdout', run.stdout, 'g l /tmp\n')

await step('background command and connect')
const bg = await sbx.commands.run('sleep 2; echo bg', { background: true })
await bg.disconnect()
const attached = await sbx.commands.connect(bg.pid)
const bgResult = await attached.wait()
expect('background stdout', bgResult.stdout, 'bg\n')

await step('write several files')
await sbx.files.write([
  { path: '/home/user/d/a.txt', data: 'A' },
  { path: 'd/b.txt', data: 'BB' },
])

await step('read')
expect('read', await sbx.files.read('d/a.txt'), 'A')

await step('list')
const entries = await sbx.files.list('d')
expect('list', entries.map((e) => e.name).sort().join(','), 'a.txt,b.txt')

await step('stat')
expect('stat size', (await sbx.files.getInfo('d/b.txt')).size, 2)

await step('rename')
await sbx.files.rename('d/b.txt', 'd/c.txt')

await step('remove')
await sbx.files.remove('d/a.txt')

await step('make dir and exists')
expect('makeDir', await sbx.files.makeDir('d/sub'), true)
expect('exists', await sbx.files.exists('d/sub'), true)

await step('process with stdin, listed and killed')
const cat = await sbx.commands.run('cat', { background: true, stdin: true })
await sbx.commands.sendStdin(cat.pid, 'hi\n')
const procs = await sbx.commands.list()
expect('listed cat', procs.some((p) => p.pid === cat.pid), true)
expect('kill cat', await sbx.commands.kill(cat.pid), true)
await cat.wait().catch(() => {})

await step('sandbox info')
expect('info', (await sbx.getInfo()).sandboxId, sbx.sandboxId)

await step('command as a user with a timeout')
const who = await sbx.commands.run('whoami', { user: 'user', timeoutMs: 5_000 })
expect('whoami', who.stdout, 'user\n')

await step('write one file as a user')
// A stream, as the Go client's Write takes: the SDK sends a stream as raw
// bytes (application/octet-stream) and a string as a multipart form.
await sbx.files.write('d/one.txt', new Blob(['one']).stream(), { user: 'user' })

await step('read as a user')
expect('read as a user', await sbx.files.read('d/one.txt', { user: 'user' }), 'one')

await step('signed download URL')
const down = await sbx.downloadUrl('d/c.txt', { useSignatureExpiration: 60_000 })
await fetchSigned(down, 'GET')

await step('signed upload URL')
const up = await sbx.uploadUrl('d/up.txt', { useSignatureExpiration: 60_000 })
await fetchSigned(up, 'POST', 'uploaded')

await step('run code in a context')
const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
const exec = await sbx.runCode('import os\nos.getcwd()', { context: ctx })
expect('run code', exec.text, '/tmp')

await step('code contexts listed, restarted, removed')
expect('contexts listed', (await sbx.listCodeContexts()).some((c) => c.id === ctx.id), true)
await sbx.restartCodeContext(ctx)
await sbx.removeCodeContext(ctx)

await step('run code with envs')
const withEnvs = await sbx.runCode('import os\nos.environ["V"]', { envs: { V: 'x' } })
expect('run code with envs', withEnvs.text, 'x')

await step('set timeout')
await sbx.setTimeout(300_000)

await step('pause')
await sbx.pause()

await step('connect')
const resumed = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 300_000 })

await step('list with metadata filters')
const pager = Sandbox.list({ query: { metadata, state: ['running', 'paused'] }, limit: 10 })
const listed = await pager.nextItems()
expect('listed', listed.some((s) => s.sandboxId === sbx.sandboxId), true)

await step('kill')
await resumed.kill()

await step('end')

// fetchSigned uses a signed URL as a third party would, except that the
// routing headers are added: the SDK puts E2B_SANDBOX_URL's bare host in
// the URL, which only a proxy routing by header can serve.
async function fetchSigned(url, method, body) {
  let init = { method, headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } }
  if (body !== undefined) {
    const form = new FormData()
    form.append('file', new Blob([body]), 'up.txt')
    init = { ...init, body: form }
  }
  const r = await fetch(url, init)
  if (r.status !== 200) throw new Error(`${method} ${url}: ${r.status} ${await r.text()}`)
  await r.arrayBuffer()
}
