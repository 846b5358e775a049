import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, SandboxNotFoundError } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { sleep, waitFor } from './helpers.mjs'

test('lifecycle', async (t) => {
  await t.test('create, getInfo, list by metadata, kill, isRunning', async () => {
    const tag = `conf-${Date.now()}-${Math.random().toString(16).slice(2)}`
    const a = await Sandbox.create('base', { metadata: { suite: tag, n: '1' }, timeoutMs: 60_000 })
    const b = await Sandbox.create('base', { metadata: { suite: tag, n: '2' }, timeoutMs: 60_000 })
    try {
      assert.match(a.sandboxId, /^[a-z0-9]+$/)
      const info = await a.getInfo()
      assert.equal(info.sandboxId, a.sandboxId)
      assert.equal(info.metadata.suite, tag)
      assert.equal(info.state, 'running')

      const all = []
      const pager = Sandbox.list({ query: { metadata: { suite: tag } }, limit: 1 })
      while (pager.hasNext) all.push(...(await pager.nextItems()))
      assert.deepEqual(all.map((s) => s.sandboxId).sort(), [a.sandboxId, b.sandboxId].sort())

      const one = []
      const p2 = Sandbox.list({ query: { metadata: { suite: tag, n: '2' } } })
      while (p2.hasNext) one.push(...(await p2.nextItems()))
      assert.deepEqual(one.map((s) => s.sandboxId), [b.sandboxId])

      assert.equal(await a.isRunning(), true)
      assert.equal(await a.kill(), true)
      assert.equal(await a.isRunning(), false)
      assert.equal(await Sandbox.kill(a.sandboxId), false)
      await assert.rejects(Sandbox.getInfo(a.sandboxId), SandboxNotFoundError)
    } finally {
      await a.kill().catch(() => {})
      await b.kill().catch(() => {})
    }
  })

  await t.test('setTimeout expiry kills the sandbox', async () => {
    const s = await Sandbox.create('base', { timeoutMs: 60_000 })
    try {
      await s.setTimeout(2_000)
      await waitFor(async () => !(await s.isRunning()), { timeoutMs: 15_000, intervalMs: 250 })
    } finally {
      await s.kill().catch(() => {})
    }
  })

  await t.test('pause and resume keep the kernel state', async () => {
    const s = await CodeSandbox.create('code-interpreter-v1', { timeoutMs: 60_000 })
    try {
      await s.runCode('kept = 41 + 1')
      assert.equal(await s.pause(), true)
      const info = await Sandbox.getInfo(s.sandboxId)
      assert.equal(info.state, 'paused')
      const resumed = await CodeSandbox.connect(s.sandboxId)
      const ex = await resumed.runCode('kept')
      assert.equal(ex.text, '42')
    } finally {
      await s.kill().catch(() => {})
    }
  })

  await t.test('connect with a shorter timeout never shortens the life', async () => {
    const s = await Sandbox.create('base', { timeoutMs: 120_000 })
    try {
      const before = (await s.getInfo()).endAt.getTime()
      await Sandbox.connect(s.sandboxId, { timeoutMs: 5_000 })
      assert.equal((await s.getInfo()).endAt.getTime(), before)
      await Sandbox.connect(s.sandboxId, { timeoutMs: 600_000 })
      assert.ok((await s.getInfo()).endAt.getTime() > before + 300_000)
    } finally {
      await s.kill().catch(() => {})
    }
  })

  await t.test('metrics in a time range', async () => {
    const s = await Sandbox.create('base', { timeoutMs: 60_000 })
    try {
      const created = new Date(Date.now() - 1_000)
      const now = await s.getMetrics()
      assert.ok(now.length >= 1)
      const last = now[now.length - 1]
      assert.ok(last.memUsed > 0 && last.cpuCount >= 1)
      const inRange = await s.getMetrics({ start: created, end: new Date(Date.now() + 1_000) })
      assert.ok(inRange.length >= 1)
      for (const m of inRange) assert.ok(m.timestamp.getTime() >= Math.floor(created.getTime() / 1000) * 1000)
      const before = await s.getMetrics({ start: new Date(Date.now() - 3_600_000), end: new Date(Date.now() - 1_800_000) })
      assert.deepEqual(before, [])
    } finally {
      await s.kill().catch(() => {})
    }
  })

  await t.test('connect to an unknown sandbox fails clearly', async () => {
    await assert.rejects(Sandbox.connect('doesnotexist000000000'), SandboxNotFoundError)
  })
})
