// Runs Python in a sessionbox session with live output, then moves a file in
// and out. Against a local API:
//
//   make run        # prints SESSIONBOX_URL and SESSIONBOX_API_KEY to export
//   cd sdk/typescript && npm run build && node examples/quickstart.mjs
import { Sessionbox, SessionboxError } from "@sessionbox/sdk";

const baseUrl = process.env.SESSIONBOX_URL ?? "http://127.0.0.1:8080";
const apiKey = process.env.SESSIONBOX_API_KEY;
if (!apiKey) {
  console.error("set SESSIONBOX_API_KEY (make run prints one)");
  process.exit(2);
}
const sb = new Sessionbox({ baseUrl, apiKey });
const session = process.argv[2] ?? "quickstart";

// Live output: each line arrives as the code prints it.
const code = `
import time
for i in range(3):
    print(f"step {i}", flush=True)
    time.sleep(0.2)
sum(range(10))
`;
for await (const line of sb.executeStream(session, { code })) {
  switch (line.type) {
    case "stdout":
    case "stderr":
      process[line.type].write(line.text);
      break;
    case "result":
      console.log("result:", line.result.text);
      break;
    case "error":
      console.error(`${line.error.name}: ${line.error.value}`);
      break;
    case "done":
      console.log(`done in ${line.summary.durationMs} ms`);
      break;
  }
}

// Files: upload with progress (any size: presigned, straight to storage), use, read back.
const csv = new TextEncoder().encode("city,temp\nOslo,4\nLisbon,17\n");
await sb.uploadFile(session, "data/temps.csv", csv, {
  onProgress: ({ loaded, total }) => console.log(`uploaded ${loaded}/${total} bytes`),
});
const res = await sb.execute(session, {
  code: "import pandas as pd\ndf = pd.read_csv('data/temps.csv')\ndf.to_json('data/temps.json', orient='records')\ndf.temp.mean()",
});
console.log("mean temperature:", res.results[0]?.text);
console.log("as JSON:", await sb.readTextFile(session, "data/temps.json"));

// Errors are typed: status, a stable problem type, and words to show a user.
try {
  await sb.execute(session, { code: "" });
} catch (err) {
  if (!(err instanceof SessionboxError)) throw err;
  console.log(`refused: ${err.status} ${err.type} (${err.detail})`);
}
await sb.deleteSession(session);
