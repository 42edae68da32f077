# A stand-in for sglang.bench_serving's client loop (sglang is not installed
# here): asyncio + aiohttp, one POST per request under a semaphore, the
# body read line by line, "data: " stripped, each chunk json.loads'ed, TTFT
# and ITL taken with time.perf_counter() on chunks with text, as its
# async_request_openai_completions does. Mode "per-request" opens an
# aiohttp.ClientSession per request, as the copies of sglang's request
# functions we read do; "shared" uses one session, as newer vllm bench
# serve does. Written for flightdeck's benchmark (docs/performance.md); not
# a copy of either tool's code.
#
# usage: python3 aiohttp_client.py URL REQUESTS CONCURRENCY per-request|shared
# prints: completed elapsed_s cpu_s (this process's CPU time over the run)
import asyncio
import json
import sys
import time

import aiohttp


async def one(shared, url, sem, out):
    async with sem:
        if shared is None:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:
                await request(session, url, out)
        else:
            await request(shared, url, out)


async def request(session, url, out):
    payload = {"model": "m", "prompt": [1, 2, 3, 4], "max_tokens": 8, "ignore_eos": True,
               "stream": True, "stream_options": {"include_usage": True}}
    st = time.perf_counter()
    ttft, last, itl, tokens = 0.0, st, [], 0
    async with session.post(url, json=payload) as resp:
        if resp.status != 200:
            return
        async for raw in resp.content:
            raw = raw.strip()
            if not raw:
                continue
            chunk = raw.decode("utf-8")
            if chunk.startswith("data: "):
                chunk = chunk[len("data: "):]
            if chunk == "[DONE]":
                break
            data = json.loads(chunk)
            now = time.perf_counter()
            if data.get("choices") and data["choices"][0].get("text"):
                if ttft == 0.0:
                    ttft = now - st
                else:
                    itl.append(now - last)
                last = now
            if data.get("usage"):
                tokens = data["usage"].get("completion_tokens", tokens)
    out.append((ttft, time.perf_counter() - st, itl, tokens))


async def main():
    url, n, c, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    sem = asyncio.Semaphore(c)
    out = []
    conn = aiohttp.TCPConnector(limit=c)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=600)) as session:
        shared = session if mode == "shared" else None
        start, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(shared, url, sem, out) for _ in range(n)))
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(len(out), elapsed, cpu)


asyncio.run(main())
