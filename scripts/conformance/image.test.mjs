import { test } from 'node:test'
import assert from 'node:assert/strict'
import { withSandbox } from './helpers.mjs'

// What E2B's base image gives commands beyond the protocol.
test('sandbox image', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('python is python3', async () => {
      const r = await sbx.commands.run('python --version')
      assert.match(r.stdout + r.stderr, /^Python 3\./)
    })

    await t.test('envd answers on localhost inside the sandbox', async () => {
      const r = await sbx.commands.run("curl -sS -o /dev/null -w '%{http_code}' http://localhost:49983/health")
      assert.equal(r.stdout, '204')
    })

    await t.test('the interpreter answers on localhost inside the sandbox', async () => {
      const r = await sbx.commands.run("curl -sS -o /dev/null -w '%{http_code}' http://localhost:49999/health")
      assert.equal(r.stdout, '200')
    })

    await t.test('pip is configured to install without flags, into ~/.local', async () => {
      const r = await sbx.commands.run('pip download --help >/dev/null && pip config list')
      assert.match(r.stdout, /break-system-packages='true'/)
    })
  })
})
