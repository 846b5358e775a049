// envd's file semantics as E2B's envd has them, through the official SDK:
// what watchers see of a write, parents made for the user, and paths of a
// `user: "root"` request resolved against /root.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FilesystemEventType } from 'e2b'
import { withSandbox } from './helpers.mjs'

// watchFor watches dir and resolves once an event of type for name comes.
async function watchFor(sbx, dir, name, type, action, opts = {}) {
  let seen
  const got = new Promise((resolve) => { seen = resolve })
  const h = await sbx.files.watchDir(dir, (e) => { if (e.name === name && e.type === type) seen(e) }, opts)
  try {
    await action()
    return await Promise.race([got, new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${type} for ${name}`)), 10_000))])
  } finally {
    await h.stop()
  }
}

test('envd file semantics', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('a write replacing a file is a write event', async () => {
      await sbx.files.write('w/f.txt', 'old')
      const e = await watchFor(sbx, 'w', 'f.txt', FilesystemEventType.WRITE,
        () => sbx.files.write('w/f.txt', 'new'), { includeEntry: true })
      assert.equal(e.entry?.path, '/home/user/w/f.txt')
    })

    await t.test('a new file in a new nested directory is a write event, recursively', async () => {
      await sbx.files.makeDir('r')
      await watchFor(sbx, 'r', 'n', FilesystemEventType.CREATE, () => sbx.files.makeDir('r/n'), { recursive: true })
      await watchFor(sbx, 'r', 'n/f.txt', FilesystemEventType.WRITE, () => sbx.files.write('r/n/f.txt', 'x'), { recursive: true })
    })

    await t.test('several files whose parents are missing outside home', async () => {
      const files = [
        { path: '/0/a.txt', data: 'A' },
        { path: '/home/user/b.txt', data: 'B' },
        { path: '/2/c/d.txt', data: 'D' },
      ]
      const infos = await sbx.files.write(files)
      assert.deepEqual(infos.map((i) => i.path), files.map((f) => f.path))
      for (const f of files) assert.equal(await sbx.files.read(f.path), f.data)
      const r = await sbx.commands.run('stat -c %U /0 /0/a.txt /2 /2/c /2/c/d.txt')
      assert.equal(r.stdout, 'user\n'.repeat(5))
    })

    await t.test('relative paths of user root resolve under /root', async () => {
      const root = { user: 'root' }
      const info = await sbx.files.write('rel/r.txt', 'r', root)
      assert.equal(info.path, '/root/rel/r.txt')
      assert.equal(await sbx.files.read('rel/r.txt', root), 'r')
      assert.deepEqual((await sbx.files.list('rel', root)).map((e) => e.path), ['/root/rel/r.txt'])
      assert.equal(await sbx.files.makeDir('made', root), true)
      assert.equal((await sbx.files.getInfo('made', root)).path, '/root/made')
      assert.equal((await sbx.files.rename('made', 'moved', root)).path, '/root/moved')
      await watchFor(sbx, 'moved', 'w.txt', FilesystemEventType.WRITE, () => sbx.files.write('moved/w.txt', 'w', root), root)
      const pwd = await sbx.commands.run('pwd', { ...root, cwd: 'moved' })
      assert.equal(pwd.stdout, '/root/moved\n')
      await sbx.files.remove('moved', root)
      assert.equal(await sbx.files.exists('/root/moved', root), false)
      // The user's own relative paths stay in /home/user.
      assert.equal((await sbx.files.write('rel/u.txt', 'u')).path, '/home/user/rel/u.txt')
    })

    await t.test('signed URLs of user root resolve under /root', async () => {
      const ul = await sbx.uploadUrl('signed/s.txt', { user: 'root' })
      const form = new FormData()
      form.append('file', new Blob(['signed']), 's.txt')
      const up = await fetch(ul, { method: 'POST', body: form })
      assert.equal(up.status, 200, await up.text())
      assert.equal(await sbx.files.read('/root/signed/s.txt', { user: 'root' }), 'signed')
      const dl = await fetch(await sbx.downloadUrl('signed/s.txt', { user: 'root' }))
      assert.equal(dl.status, 200)
      assert.equal(await dl.text(), 'signed')
    })
  })
})
