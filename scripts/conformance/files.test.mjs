import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { FileNotFoundError, FileType } from 'e2b'
import { withSandbox, waitFor } from './helpers.mjs'

const sha = (buf) => createHash('sha256').update(buf).digest('hex')

test('files', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('text round trip, visible to commands', async () => {
      const info = await sbx.files.write('notes/hello.txt', 'hello world\n')
      assert.equal(info.path, '/home/user/notes/hello.txt')
      assert.equal(await sbx.files.read('/home/user/notes/hello.txt'), 'hello world\n')
      const r = await sbx.commands.run('cat notes/hello.txt; stat -c %U notes/hello.txt')
      assert.equal(r.stdout, 'hello world\nuser\n')
    })

    await t.test('binary round trip', async () => {
      const data = randomBytes(4096)
      await sbx.files.write('/home/user/bin.dat', data.buffer.slice(data.byteOffset, data.byteOffset + data.length))
      const back = Buffer.from(await sbx.files.read('/home/user/bin.dat', { format: 'bytes' }))
      assert.equal(sha(back), sha(data))
    })

    await t.test('16 MiB file', async () => {
      const data = randomBytes(16 << 20)
      await sbx.files.write('/home/user/big.bin', new Blob([data]))
      const r = await sbx.commands.run('sha256sum big.bin | cut -d" " -f1')
      assert.equal(r.stdout.trim(), sha(data))
      const back = Buffer.from(await sbx.files.read('/home/user/big.bin', { format: 'bytes' }))
      assert.equal(back.length, data.length)
      assert.equal(sha(back), sha(data))
    })

    await t.test('several files in one write', async () => {
      const infos = await sbx.files.write([
        { path: '/home/user/multi/a.txt', data: 'A' },
        { path: '/home/user/multi/sub/b.txt', data: 'B' },
      ])
      assert.equal(infos.length, 2)
      assert.equal(await sbx.files.read('/home/user/multi/a.txt'), 'A')
      assert.equal(await sbx.files.read('/home/user/multi/sub/b.txt'), 'B')
    })

    await t.test('list, exists, makeDir, rename, remove', async () => {
      assert.equal(await sbx.files.makeDir('/home/user/d'), true)
      assert.equal(await sbx.files.makeDir('/home/user/d'), false)
      await sbx.files.write('/home/user/d/x.txt', 'x')
      const entries = await sbx.files.list('/home/user/d')
      assert.deepEqual(entries.map((e) => [e.name, e.type]), [['x.txt', FileType.FILE]])
      const moved = await sbx.files.rename('/home/user/d/x.txt', '/home/user/d/y.txt')
      assert.equal(moved.path, '/home/user/d/y.txt')
      assert.equal(await sbx.files.exists('/home/user/d/x.txt'), false)
      assert.equal(await sbx.files.exists('/home/user/d/y.txt'), true)
      await sbx.files.remove('/home/user/d')
      assert.equal(await sbx.files.exists('/home/user/d'), false)
    })

    await t.test('not-found errors', async () => {
      await assert.rejects(sbx.files.read('/home/user/nope.txt'), FileNotFoundError)
      await assert.rejects(sbx.files.list('/home/user/nope'), FileNotFoundError)
    })

    await t.test('watch sees a new file', async () => {
      await sbx.files.makeDir('/home/user/watched')
      const seen = []
      const h = await sbx.files.watchDir('/home/user/watched', (e) => { seen.push(e) })
      try {
        await sbx.files.write('/home/user/watched/new.txt', 'n')
        await waitFor(() => seen.some((e) => e.name === 'new.txt'))
      } finally {
        await h.stop()
      }
    })

    await t.test('getInfo of a symlink gives the resolved absolute target', async () => {
      await sbx.files.write('/home/user/links/target.txt', 't')
      await sbx.commands.run('ln -s target.txt links/rel && ln -s rel links/chain')
      for (const name of ['rel', 'chain']) {
        const info = await sbx.files.getInfo(`/home/user/links/${name}`)
        assert.equal(info.symlinkTarget, '/home/user/links/target.txt')
      }
    })

    await t.test('a write without metadata clears the old metadata', async () => {
      await sbx.files.write('/home/user/meta.txt', 'v1', { metadata: { owner: 'alice' } })
      assert.deepEqual((await sbx.files.getInfo('/home/user/meta.txt')).metadata, { owner: 'alice' })
      await sbx.files.write('/home/user/meta.txt', 'v2')
      assert.equal((await sbx.files.getInfo('/home/user/meta.txt')).metadata, undefined)
    })

    await t.test('removing a missing path succeeds', async () => {
      await sbx.files.remove('/home/user/never-there.txt')
      await sbx.files.remove('/home/user/never/there/either')
      assert.equal(await sbx.files.exists('/home/user/never'), false)
    })

    await t.test('signed download and upload URLs', async () => {
      await sbx.files.write('/home/user/url.txt', 'via url')
      const dl = await sbx.downloadUrl('/home/user/url.txt')
      const res = await fetch(dl, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
      assert.equal(res.status, 200)
      assert.equal(await res.text(), 'via url')
    })

    await t.test('signed URLs work unmodified, without routing headers', async () => {
      await sbx.files.write('/home/user/plain-url.txt', 'no headers')
      const dl = await sbx.downloadUrl('/home/user/plain-url.txt')
      const res = await fetch(dl)
      assert.equal(res.status, 200)
      assert.equal(await res.text(), 'no headers')
      const ul = await sbx.uploadUrl('/home/user/uploaded-via-url.txt')
      const form = new FormData()
      form.append('file', new Blob(['up by url']), 'uploaded-via-url.txt')
      const up = await fetch(ul, { method: 'POST', body: form })
      assert.equal(up.status, 200)
      assert.equal(await sbx.files.read('/home/user/uploaded-via-url.txt'), 'up by url')
      const forged = new URL(dl)
      forged.searchParams.set('signature', 'v1_' + 'A'.repeat(43))
      assert.equal((await fetch(forged)).status, 401)
    })
  })
})
