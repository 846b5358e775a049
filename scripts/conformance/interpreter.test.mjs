import { test } from 'node:test'
import assert from 'node:assert/strict'
import { withSandbox } from './helpers.mjs'

test('code interpreter', async (t) => {
  await withSandbox(async (sbx) => {
    await t.test('state across calls and the last expression', async () => {
      await sbx.runCode('x = 20')
      const ex = await sbx.runCode('x * 2 + 2')
      assert.equal(ex.text, '42')
      assert.ok(ex.executionCount >= 2)
    })

    await t.test('logs', async () => {
      const ex = await sbx.runCode('import sys\nprint("to out")\nprint("to err", file=sys.stderr)')
      assert.deepEqual(ex.logs.stdout, ['to out\n'])
      assert.deepEqual(ex.logs.stderr, ['to err\n'])
      assert.equal(ex.error, undefined)
    })

    await t.test('errors carry name, value and traceback', async () => {
      const ex = await sbx.runCode('def f():\n    raise ValueError("bad value")\nf()')
      assert.equal(ex.error.name, 'ValueError')
      assert.equal(ex.error.value, 'bad value')
      assert.match(ex.error.traceback, /f\(\)/)
    })

    await t.test('live callbacks', async () => {
      const out = []
      const results = []
      await sbx.runCode('import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.2)\n"end"', {
        onStdout: (m) => out.push(m.line),
        onResult: (r) => results.push(r),
      })
      assert.equal(out.join(''), '0\n1\n2\n')
      assert.equal(results.length, 1)
      assert.equal(results[0].text, 'end')
    })

    await t.test('separate contexts keep separate state', async () => {
      const ctx = await sbx.createCodeContext()
      await sbx.runCode('y = "default"')
      await sbx.runCode('y = "other"', { context: ctx })
      assert.equal((await sbx.runCode('y')).text, 'default')
      assert.equal((await sbx.runCode('y', { context: ctx })).text, 'other')
      const listed = await sbx.listCodeContexts()
      assert.ok(listed.some((c) => c.id === ctx.id))
      await sbx.restartCodeContext(ctx)
      const ex = await sbx.runCode('y', { context: ctx })
      assert.equal(ex.error.name, 'NameError')
      await sbx.removeCodeContext(ctx)
    })

    await t.test('matplotlib figures come back as PNG', async () => {
      const ex = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()')
      const png = ex.results.find((r) => r.png)
      assert.ok(png, `no PNG result: ${JSON.stringify(ex.results.map((r) => Object.keys(r)))}`)
      assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG')
    })

    await t.test('files written by code are readable through the files API', async () => {
      await sbx.runCode('open("from_code.txt", "w").write("written by code")')
      assert.equal(await sbx.files.read('/home/user/from_code.txt'), 'written by code')
    })

    await t.test('indented cells run as IPython runs them', async () => {
      const ex = await sbx.runCode(`
        def add(a, b):
            return a + b
        add(40, 2)
      `)
      assert.equal(ex.error, undefined)
      assert.equal(ex.text, '42')
    })

    await t.test('figures carry chart data', async () => {
      const ex = await sbx.runCode(`
import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [1, 4, 9], label='squares')
plt.plot([1, 2, 3], [1, 8, 27], label='cubes')
plt.title('Powers'); plt.xlabel('n'); plt.ylabel('value (units)')
plt.show()
fig, axs = plt.subplots(1, 2)
axs[0].bar(['a', 'b'], [3, 5], label='sales')
axs[1].pie([1, 3], labels=['x', 'y'])
plt.show()
`)
      assert.equal(ex.error, undefined)
      const [line, sup] = ex.results.map((r) => r.chart)
      assert.equal(line.type, 'line')
      assert.equal(line.title, 'Powers')
      assert.equal(line.y_unit, 'units')
      assert.equal(line.x_scale, 'linear')
      assert.deepEqual(line.elements.map((e) => e.label), ['squares', 'cubes'])
      assert.deepEqual(line.elements[1].points, [[1, 1], [2, 8], [3, 27]])
      assert.ok(ex.results[0].png)
      assert.equal(sup.type, 'superchart')
      assert.deepEqual(sup.elements.map((c) => c.type), ['bar', 'pie'])
      assert.deepEqual(sup.elements[0].elements, [
        { label: 'a', group: 'sales', value: 3 }, { label: 'b', group: 'sales', value: 5 },
      ])
      assert.deepEqual(sup.elements[1].elements.map((w) => [w.label, w.angle]), [['x', 90], ['y', 270]])
    })

    await t.test('DataFrames carry their data', async () => {
      const ex = await sbx.runCode("import pandas as pd\npd.DataFrame({'n': [1, 2], 'name': ['a', 'b']})")
      assert.equal(ex.error, undefined)
      const r = ex.results[0]
      assert.match(r.html, /<table/)
      assert.deepEqual(r.data, { n: [1, 2], name: ['a', 'b'] })
      assert.ok(r.formats().includes('data'))
    })

    await t.test('PIL images shown or saved are PNG results', async () => {
      const ex = await sbx.runCode("from PIL import Image\nimg = Image.new('RGB', (6, 3), 'blue')\nimg.show()\nimg.save('blue.png')")
      assert.equal(ex.error, undefined)
      assert.equal(ex.results.length, 2)
      for (const r of ex.results) assert.equal(Buffer.from(r.png, 'base64').subarray(1, 4).toString(), 'PNG')
      const next = await sbx.runCode('print("clean")')
      assert.deepEqual(next.logs.stderr, [])
      assert.equal(await sbx.files.exists('/home/user/blue.png'), true)
    })

    await t.test('contexts take a cwd, /root included; a missing one is refused with 400', async () => {
      const ctx = await sbx.createCodeContext({ cwd: '/tmp' })
      assert.equal((await sbx.runCode('import os\nos.getcwd()', { context: ctx })).text, '/tmp')
      // E2B's kernels run as root, so /root works as a cwd.
      const root = await sbx.createCodeContext({ cwd: '/root' })
      const ex = await sbx.runCode('import os\nopen("made-here.txt", "w").write("x")\nos.getcwd()', { context: root })
      assert.equal(ex.text, '/root')
      await assert.rejects(sbx.createCodeContext({ cwd: '/no/such/dir' }), /400/)
    })

    await t.test('bash contexts keep a shell', async () => {
      const out = []
      await sbx.runCode('N=41; cd /tmp', { language: 'bash' })
      const ex = await sbx.runCode('echo $((N + 1)) $PWD; echo warn >&2', { language: 'bash', onStdout: (m) => out.push(m.line) })
      assert.equal(ex.error, undefined)
      assert.deepEqual(ex.logs.stdout, ['42 /tmp\n'])
      assert.deepEqual(ex.logs.stderr, ['warn\n'])
      assert.equal(out.join(''), '42 /tmp\n')
      const failed = await sbx.runCode('ls /no-such-path', { language: 'bash' })
      assert.equal(failed.error.value, '2')
      const ctx = await sbx.createCodeContext({ language: 'bash' })
      assert.equal(ctx.language, 'bash')
      assert.deepEqual((await sbx.runCode('echo ${N:-separate}', { context: ctx })).logs.stdout, ['separate\n'])
    })

    await t.test('javascript contexts keep state across await, stream console output and survive an interrupt', async () => {
      const listed = await sbx.listCodeContexts()
      assert.ok(listed.some((c) => c.language === 'javascript'), JSON.stringify(listed))
      const ctx = await sbx.createCodeContext({ language: 'js', cwd: '/tmp' })
      assert.equal(ctx.language, 'javascript')
      await sbx.runCode('const base = await Promise.resolve(40)\nfunction add(n) { return base + n }', { context: ctx })
      const out = []
      const ex = await sbx.runCode('console.log("hi"); console.error("warn"); add(2)', { context: ctx, onStdout: (m) => out.push(m.line) })
      assert.equal(ex.text, '42')
      assert.deepEqual(ex.logs.stdout, ['hi\n'])
      assert.deepEqual(ex.logs.stderr, ['warn\n'])
      assert.equal(out.join(''), 'hi\n')
      assert.equal((await sbx.runCode('process.cwd()', { context: ctx })).text, '/tmp')
      const failed = await sbx.runCode('missing()', { context: ctx })
      assert.equal(failed.error.name, 'ReferenceError')
      assert.equal(failed.error.value, 'missing is not defined')
      assert.match(failed.error.traceback, /missing is not defined/)
      // The client giving up interrupts the busy loop; the state stays.
      await assert.rejects(sbx.runCode('while (true) {}', { context: ctx, timeoutMs: 1000 }))
      assert.equal((await sbx.runCode('add(1)', { context: ctx })).text, '41')
      assert.equal((await sbx.runCode('process.env.FOO', { language: 'js', envs: { FOO: 'bar' } })).text, 'bar')
      assert.equal((await sbx.runCode("process.env.FOO || 'unset'", { language: 'js' })).text, 'unset')
      const imported = await sbx.runCode("import { readFileSync } from 'fs'\nconsole.log(typeof readFileSync)", { language: 'js' })
      assert.deepEqual(imported.logs.stdout, ['function\n'])
    })

    await t.test('typescript runs with its types stripped; syntax errors are errors', async () => {
      const ex = await sbx.runCode('const message: string = "Hello World!"; console.log(message)', { language: 'ts' })
      assert.deepEqual(ex.logs.stdout, ['Hello World!\n'])
      const typed = await sbx.runCode('interface P { x: number }\nconst sq = (p: P): number => p.x * p.x\nsq({ x: 7 })', { language: 'ts' })
      assert.equal(typed.text, '49')
      const bad = await sbx.runCode('const n: = 1', { language: 'ts' })
      assert.equal(bad.error.name, 'SyntaxError')
      const ctx = await sbx.createCodeContext({ language: 'ts' })
      assert.equal(ctx.language, 'typescript')
      assert.equal((await sbx.runCode('process.cwd()', { context: ctx })).text, '/home/user')
    })

    await t.test("a javascript cell runs again; a command's output is the cell's", async () => {
      const ctx = await sbx.createCodeContext({ language: 'js' })
      const cell = "const seen = 1; class Seen {}\nconsole.log('before')\n" +
        "require('child_process').execSync('echo from-child; echo oops >&2', { stdio: 'inherit' })\nconsole.log('after'); seen"
      for (const run of [1, 2]) {
        const ex = await sbx.runCode(cell, { context: ctx })
        assert.equal(ex.error, undefined, `run ${run}: ${JSON.stringify(ex.error)}`)
        assert.equal(ex.text, '1')
        assert.equal(ex.logs.stdout.join(''), 'before\nfrom-child\nafter\n')
        assert.equal(ex.logs.stderr.join(''), 'oops\n')
      }
    })
  }, { kind: 'code' })
})
