// Templates through the official SDKs: the runtime answers Template.exists
// for the templates it offers (the built-in ones and those run.sh configures
// with --template) and refuses a create naming any other with E2B's 404; a
// template from a definition file brings its own root filesystem, or a start
// command that is ready before the create returns.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, Template } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { TEMPLATE_BASE, TEMPLATE_CI } from './helpers.mjs'

// run.sh starts the runtime with --template conformance-agent=code-interpreter-v1
// and two definition files.
const CONFIGURED = 'conformance-agent'
const TINY = 'conformance-tiny'
const WEB = 'conformance-web'

test('templates', async (t) => {
  await t.test('Template.exists and aliasExists know the runtime\'s templates', async () => {
    for (const name of [TEMPLATE_BASE, TEMPLATE_CI, CONFIGURED, TINY, WEB, `${TEMPLATE_BASE}:default`]) {
      assert.equal(await Template.exists(name), true, name)
      assert.equal(await Template.aliasExists(name), true, name)
    }
    for (const name of ['no-such-template', `${TEMPLATE_BASE}:v9`]) {
      assert.equal(await Template.exists(name), false, name)
    }
  })

  await t.test('a create naming an unknown template is refused with 404', async () => {
    await assert.rejects(Sandbox.create('no-such-template', { timeoutMs: 30_000 }), (err) => {
      assert.match(err.message, /template 'no-such-template' not found/)
      return true
    })
  })

  await t.test('a configured template runs as the built-in it names', async () => {
    const sbx = await CodeSandbox.create(CONFIGURED, { timeoutMs: 60_000 })
    try {
      assert.equal((await sbx.runCode('6 * 7')).text, '42')
      assert.equal((await Sandbox.getInfo(sbx.sandboxId)).templateId, CONFIGURED)
    } finally {
      await sbx.kill().catch(() => {})
    }
  })

  await t.test('a template\'s start command serves before the create returns', async () => {
    const sbx = await Sandbox.create(WEB, { timeoutMs: 60_000 })
    try {
      const res = await fetch(`${process.env.E2B_SANDBOX_URL}/_sandboxes/${sbx.sandboxId}/8000/index.html`)
      assert.equal(res.status, 200)
      assert.equal(await res.text(), 'served\n')
      const procs = await sbx.commands.list()
      assert.ok(procs.some((p) => p.tag === 'start_cmd'), JSON.stringify(procs))
      assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user/site\n')
    } finally {
      await sbx.kill().catch(() => {})
    }
  })

  await t.test('a template with its own root filesystem, read-only', async () => {
    const sbx = await Sandbox.create(TINY, { timeoutMs: 60_000 })
    try {
      assert.equal(await sbx.files.read('/marker'), 'from the template\n')
      const r = await sbx.commands.run('cat /etc/os-release; echo $FROM; [ -e /usr/bin/python3 ] || echo no-python')
      assert.equal(r.stdout, 'ID=conformance\ntemplate\nno-python\n')
      await assert.rejects(sbx.files.write('/marker', 'changed'))
      assert.equal(await sbx.files.read('/marker'), 'from the template\n')
      await sbx.files.write('notes.txt', 'home is writable')
      assert.equal(await sbx.files.read('notes.txt'), 'home is writable')
    } finally {
      await sbx.kill().catch(() => {})
    }
  })
})
