import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Sandbox } from 'e2b'
import { waitFor, withSandbox } from './helpers.mjs'

async function run(sbx, cmd, opts = {}) {
  try {
    return await sbx.commands.run(cmd, opts)
  } catch (err) {
    if (err && typeof err.exitCode === 'number') return err
    throw err
  }
}

test('isolation', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('system directories are read-only', async () => {
      for (const dir of ['/usr', '/etc', '/bin']) {
        const r = await run(sbx, `touch ${dir}/sessionbox-probe`)
        assert.notEqual(r.exitCode, 0, `could write to ${dir}`)
      }
    })

    await t.test('no host secrets', async () => {
      const r = await run(sbx, 'cat /etc/shadow')
      assert.notEqual(r.exitCode, 0)
      const passwd = await run(sbx, 'cat /etc/passwd')
      assert.doesNotMatch(passwd.stdout, /^(?!root|user|nobody).*:x:/m, 'host accounts visible')
    })

    await t.test('no host loopback', async () => {
      const server = createServer((req, res) => res.end('host secret'))
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address()
      try {
        const r = await run(sbx, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:${port}', timeout=3).read())"`)
        assert.notEqual(r.exitCode, 0)
        assert.doesNotMatch(r.stdout, /host secret/)
      } finally {
        server.close()
      }
    })

    await t.test('with internet access, still no host loopback', async () => {
      const server = createServer((req, res) => res.end('host secret'))
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address()
      const online = await Sandbox.create('base', { timeoutMs: 60_000, allowInternetAccess: true })
      try {
        const route = await online.commands.run('cat /proc/net/route')
        assert.match(route.stdout, /^tap0\s+00000000/m, 'no default route through the sandbox network')
        for (const host of ['127.0.0.1', '10.0.2.2']) {
          const r = await run(online, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://${host}:${port}', timeout=3).read())"`)
          assert.notEqual(r.exitCode, 0, `reached the host's loopback through ${host}`)
          assert.doesNotMatch(r.stdout, /host secret/)
        }
      } finally {
        await online.kill().catch(() => {})
        server.close()
      }
    })

    await t.test('a memory bomb is contained and the sandbox stays usable', async () => {
      // One huge allocation, and memory grabbed a page at a time until the
      // sandbox's limit stops it.
      const huge = await run(sbx, 'python3 -c "x = bytearray(64 << 30)"', { timeoutMs: 30_000 })
      assert.notEqual(huge.exitCode, 0)
      const creep = await run(sbx, `python3 -c 'a = [b"x" * (8 << 20) for _ in iter(int, 1)]'`, { timeoutMs: 60_000 })
      assert.ok(creep.exitCode === 137 || creep.exitCode === -1 || /MemoryError/.test(creep.stderr),
        `memory creep ended with ${creep.exitCode}: ${creep.stderr}`)
      assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
    })

    await t.test('a fork bomb is contained: other sandboxes answer, and the bombed one recovers', async () => {
      const bystander = await Sandbox.create('base', { timeoutMs: 60_000 })
      try {
        // The bomb runs in the foreground, so the command's time limit ends
        // it: every process it forked is in the command's process group.
        const bomb = run(sbx, 'bomb() { bomb | bomb; }; bomb', { timeoutMs: 5_000 }).catch((err) => err)
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        assert.equal((await bystander.commands.run('echo bystander')).stdout, 'bystander\n')
        await bomb
        // The killed processes take a moment to be reaped; then the
        // sandbox runs commands again.
        const r = await waitFor(() => sbx.commands.run('echo alive', { timeoutMs: 10_000 }).catch(() => null),
          { timeoutMs: 30_000, intervalMs: 250 })
        assert.equal(r.stdout, 'alive\n')
      } finally {
        await bystander.kill().catch(() => {})
      }
    })

    await t.test('an output flood is truncated', async () => {
      // The reader stops for 1.5 s at the first chunk (blocking the event
      // loop, as a busy client would) while the flood is written: output
      // is bounded only while nobody reads it. The flood is random, so
      // compression on the wire cannot fit it into the socket buffers.
      let seen = 0
      let stalled = false
      await run(sbx, 'head -c 150000000 /dev/urandom | base64 -w0', {
        timeoutMs: 60_000,
        onStdout: (d) => {
          if (!stalled) {
            stalled = true
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500)
          }
          seen += d.length
        },
      })
      assert.ok(seen < 200_000_000, `all ${seen} bytes came through`)
      assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
    })
  })
})
