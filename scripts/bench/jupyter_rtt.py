"""Baseline for the interpreter round trip: `1+1` on a Jupyter kernel
(ipykernel over ZeroMQ, Debian's python3-ipykernel), measured the way the
sessionbox kernel benchmark measures its own: request sent to reply and
result received, one at a time, after a warm-up.

Usage: /usr/bin/python3 jupyter_rtt.py [N]   prints p50 and p99 in ms.
"""
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(20):
            kc.execute_interactive("1+1", timeout=30, output_hook=lambda msg: None)
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            kc.execute_interactive("1+1", timeout=30, output_hook=lambda msg: None)
            samples.append((time.perf_counter() - t0) * 1000)
        samples.sort()
        p50 = statistics.median(samples)
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        print(f"jupyter_kernel_1plus1 n={n} p50_ms={p50:.3f} p99_ms={p99:.3f}")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
