import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CommandExitError } from 'e2b'
import { withSandbox, sleep, waitFor } from './helpers.mjs'

test('commands', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('stdout, stderr and exit code', async () => {
      const r = await sbx.commands.run('echo out; echo err >&2')
      assert.equal(r.exitCode, 0)
      assert.equal(r.stdout, 'out\n')
      assert.equal(r.stderr, 'err\n')
    })

    await t.test('non-zero exit throws CommandExitError with the result', async () => {
      await assert.rejects(sbx.commands.run('echo partial; exit 3'), (err) => {
        assert.ok(err instanceof CommandExitError, `got ${err}`)
        assert.equal(err.exitCode, 3)
        assert.equal(err.stdout, 'partial\n')
        return true
      })
    })

    await t.test('runs as user in /home/user with a login shell', async () => {
      const r = await sbx.commands.run('id -un; id -u; pwd; echo $HOME')
      assert.equal(r.stdout, 'user\n1000\n/home/user\n/home/user\n')
    })

    await t.test('envs and cwd', async () => {
      await sbx.files.makeDir('/home/user/work')
      const r = await sbx.commands.run('echo $GREETING; pwd', { envs: { GREETING: 'hello' }, cwd: '/home/user/work' })
      assert.equal(r.stdout, 'hello\n/home/user/work\n')
    })

    await t.test('live output arrives before the command ends', async () => {
      const chunks = []
      let firstAt = 0
      const started = Date.now()
      const r = await sbx.commands.run('echo one; sleep 1; echo two', {
        onStdout: (d) => { if (!firstAt) firstAt = Date.now(); chunks.push(d) },
      })
      const endedAt = Date.now()
      assert.equal(chunks.join(''), 'one\ntwo\n')
      assert.equal(r.stdout, 'one\ntwo\n')
      assert.ok(firstAt - started < endedAt - started - 500, 'first chunk came only at the end')
    })

    await t.test('background command, list, connect and kill', async () => {
      const h = await sbx.commands.run('sleep 60', { background: true })
      assert.ok(h.pid > 0)
      const listed = await sbx.commands.list()
      assert.ok(listed.some((p) => p.pid === h.pid), 'background process not listed')
      assert.equal(await sbx.commands.kill(h.pid), true)
      await assert.rejects(h.wait())
      assert.equal(await sbx.commands.kill(999999), false)
    })

    await t.test('disconnect leaves the process running; connect gets its end', async () => {
      const h = await sbx.commands.run('sleep 1; echo done', { background: true })
      await h.disconnect()
      const again = await sbx.commands.connect(h.pid)
      const r = await again.wait()
      assert.equal(r.exitCode, 0)
    })

    await t.test('stdin', async () => {
      const h = await sbx.commands.run('read line; echo got:$line', { background: true, stdin: true })
      await sbx.commands.sendStdin(h.pid, 'abc\n')
      const r = await h.wait()
      assert.equal(r.stdout, 'got:abc\n')
    })

    await t.test('timeout kills the command', async () => {
      const started = Date.now()
      await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 1000 }))
      assert.ok(Date.now() - started < 15_000)
      await waitFor(async () => {
        const ps = await sbx.commands.run('pgrep -x sleep || true')
        return ps.stdout.trim() === ''
      })
    })
  })
})
