"""Runs Python in a sessionbox session with live output, draws a chart, then
moves a file in and out. Against a local API:

    make run        # prints SESSIONBOX_URL and SESSIONBOX_API_KEY to export
    PYTHONPATH=sdk/python python3 sdk/python/examples/quickstart.py
"""

import base64
import sys

from sessionbox import Sessionbox, SessionboxError

session_id = sys.argv[1] if len(sys.argv) > 1 else "quickstart"

with Sessionbox() as sb:  # SESSIONBOX_URL, SESSIONBOX_API_KEY
    s = sb.session(session_id)

    # Live output: each chunk arrives as the code prints it.
    code = "import time\nfor i in range(3):\n    print(f'step {i}', flush=True)\n    time.sleep(0.2)\nsum(range(10))"
    run = s.execute(code, on_stdout=lambda text: print(text, end="", flush=True))
    print("result:", run.text)

    # A chart comes as a result with a base64 PNG.
    charts = []
    s.execute("import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()", on_result=lambda r: "png" in r and charts.append(r.png))
    print("chart:", len(base64.b64decode(charts[0])), "bytes of PNG")

    # Files: in, used, back out; any size goes (presigned past the inline limit).
    s.files.write("data/temps.csv", "city,temp\nOslo,4\nLisbon,17\n")
    mean = s.execute("import pandas as pd\ndf = pd.read_csv('data/temps.csv')\ndf.to_json('data/temps.json', orient='records')\ndf.temp.mean()")
    print("mean temperature:", mean.text)
    print("as JSON:", s.files.read_text("data/temps.json"))

    # Shell commands: a non-zero exit is a result.
    print("exit code:", s.commands.run("ls data; exit 3").exit_code)

    # Errors are typed: a class per problem type, with status, type and detail.
    try:
        s.execute("")
    except SessionboxError as err:
        print(f"refused: {err.status} {err.type} ({type(err).__name__})")
    s.delete()
