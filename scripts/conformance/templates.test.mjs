// Templates through the official SDKs: the runtime answers Template.exists
// for the templates it offers (the built-in ones and one run.sh configures
// with --template) and refuses a create naming any other with E2B's 404.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, Template } from 'e2b'
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter'
import { TEMPLATE_BASE, TEMPLATE_CI } from './helpers.mjs'

// run.sh starts the runtime with --template conformance-agent=code-interpreter-v1.
const CONFIGURED = 'conformance-agent'

test('templates', async (t) => {
  await t.test('Template.exists and aliasExists know the runtime\'s templates', async () => {
    for (const name of [TEMPLATE_BASE, TEMPLATE_CI, CONFIGURED, `${TEMPLATE_BASE}:default`]) {
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
})
