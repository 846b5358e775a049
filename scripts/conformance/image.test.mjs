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

    await t.test('sudo runs commands as root without a password', async () => {
      const r = await sbx.commands.run('sudo whoami; whoami')
      assert.equal(r.stdout, 'root\nuser\n')
    })

    await t.test('commands run as root when asked', async () => {
      const r = await sbx.commands.run('id -u; echo $HOME', { user: 'root' })
      assert.equal(r.stdout, '0\n/root\n')
    })

    await t.test('files are written and read as root when asked', async () => {
      await sbx.files.write('/root/secret.txt', 'for root', { user: 'root' })
      assert.equal(await sbx.files.read('/root/secret.txt', { user: 'root' }), 'for root')
      await assert.rejects(sbx.files.read('/root/secret.txt'))
      const r = await sbx.commands.run('stat -c %U /root/secret.txt', { user: 'root' })
      assert.equal(r.stdout, 'root\n')
    })

    await t.test('pip is configured to install without flags, into ~/.local', async () => {
      const r = await sbx.commands.run('pip download --help >/dev/null && pip config list')
      assert.match(r.stdout, /break-system-packages='true'/)
    })
  })
})
