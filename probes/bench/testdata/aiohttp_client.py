# A stand-in for sglang.bench_serving's client (sglang itself is not
# installed here), written for flightdeck's benchmark (docs/performance.md)
# after reading sglang's python/sglang/bench_serving.py; not a copy of it.
#
# What it does as sglang does, per request:
#   - "per-request" mode opens a new aiohttp.ClientSession for every
#     request, with a total timeout of 6 hours and a 10 MiB read buffer
#     (sglang's _create_bench_client_session); "shared" mode uses one
#     session for the whole run, as newer `vllm bench serve` does;
#   - builds the JSON payload and looks up OPENAI_API_KEY for the headers;
#   - reads the body line by line; per non-blank line: strip, decode,
#     drop "data: ", take perf_counter() - start as the latency so far;
#     per chunk other than [DONE]: json.loads, and for a chunk with text
#     another perf_counter() for TTFT or the gap since the last one, and
#     the text appended to the generated text; the body is read to its end
#     (no break at [DONE]);
#   - fills a result record (dataclass), catches any exception with its
#     traceback, and updates the tqdm progress bar once per request.
# And as its benchmark() drives them at an infinite request rate: an async
# generator yields each request's input record, a task is created for each
# at once, each waits on a semaphore of CONCURRENCY, and asyncio.gather
# collects them.
#
# Where it departs from sglang, to do the same work as flightdeck's client:
# the payload asks for stream_options.include_usage, and usage is read from
# whichever chunk carries it, with choices[0] read only when "choices" is
# not empty (sglang indexes choices[0] of every chunk, which fails on the
# usage chunk of a server that sends one, and reads usage only on chunks
# with text). Left out (outside the timed part or not per request): the
# warm-up, the dataset and tokenizer, the one-second pause before the run,
# the retokenisation of the generated text and the metrics afterwards.
#
# usage: python3 aiohttp_client.py URL REQUESTS CONCURRENCY per-request|shared
# prints: completed elapsed_s cpu_s progress
#   (CPU time of this process over the run; progress is "tqdm", or
#   "no-tqdm" when tqdm is not installed and no progress bar was kept)
import asyncio
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field

import aiohttp

try:
    from tqdm.asyncio import tqdm
except ImportError:
    tqdm = None

SESSION_TIMEOUT_S = 6 * 60 * 60
READ_BUFFER_BYTES = 10 * 1024 * 1024


def bench_session():
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=SESSION_TIMEOUT_S),
                                 read_bufsize=READ_BUFFER_BYTES)


@dataclass
class Job:
    url: str
    model: str
    prompt: list
    prompt_len: int
    output_len: int


@dataclass
class Outcome:
    text: str = ""
    ok: bool = False
    latency: float = 0.0
    ttft: float = 0.0
    itl: list = field(default_factory=list)
    prompt_len: int = 0
    output_len: int = 0
    error: str = ""


def api_headers():
    key = os.environ.get("OPENAI_API_KEY")
    return {"Authorization": "Bearer " + key} if key else {}


async def stream(session, job):
    payload = {
        "model": job.model,
        "prompt": job.prompt,
        "temperature": 0.0,
        "best_of": 1,
        "max_tokens": job.output_len,
        "stream": True,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    headers = api_headers()
    out = Outcome(prompt_len=job.prompt_len)
    text, tokens, ttft, latency = "", job.output_len, 0.0, 0.0
    start = time.perf_counter()
    last = start
    try:
        async with session.post(url=job.url, json=payload, headers=headers) as resp:
            if resp.status != 200:
                out.error = resp.reason or ""
                return out
            async for line in resp.content:
                line = line.strip()
                if not line:
                    continue
                chunk = line.decode("utf-8")
                if chunk.startswith("data: "):
                    chunk = chunk[len("data: "):]
                latency = time.perf_counter() - start
                if chunk == "[DONE]":
                    continue
                data = json.loads(chunk)
                choices = data["choices"]
                if choices and choices[0]["text"]:
                    now = time.perf_counter()
                    if ttft == 0.0:
                        ttft = time.perf_counter() - start
                        out.ttft = ttft
                    else:
                        out.itl.append(now - last)
                    last = now
                    text += choices[0]["text"]
                tokens = (data.get("usage") or {}).get("completion_tokens", tokens)
            out.text, out.ok, out.latency, out.output_len = text, True, latency, tokens
    except Exception:
        out.ok = False
        out.error = "".join(traceback.format_exception(*sys.exc_info()))
    return out


async def request_own_session(job, pbar):
    async with bench_session() as session:
        out = await stream(session, job)
    if pbar:
        pbar.update(1)
    return out


async def arrivals(jobs):
    for job in jobs:
        yield job  # an infinite request rate: no pause between requests


async def main():
    url, n, c, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    jobs = [Job(url=url, model="m", prompt=[100 + i % 7, 2000, 3000, 4000], prompt_len=4, output_len=8)
            for i in range(n)]
    sem = asyncio.Semaphore(c)
    shared = None
    if mode == "shared":
        shared = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c),
                                       timeout=aiohttp.ClientTimeout(total=SESSION_TIMEOUT_S),
                                       read_bufsize=READ_BUFFER_BYTES)

    async def request_shared(job, pbar):
        out = await stream(shared, job)
        if pbar:
            pbar.update(1)
        return out

    send = request_shared if shared is not None else request_own_session

    async def limited(job, pbar):
        async with sem:
            return await send(job, pbar)

    pbar = tqdm(total=n) if tqdm is not None else None
    start, cpu = time.perf_counter(), time.process_time()
    tasks = []
    async for job in arrivals(jobs):
        tasks.append(asyncio.create_task(limited(job, pbar)))
    outs = await asyncio.gather(*tasks)
    if pbar is not None:
        pbar.close()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if shared is not None:
        await shared.close()
    done = sum(1 for o in outs if o.ok)
    if done != n:
        print("failed:", next(o.error for o in outs if not o.ok), file=sys.stderr)
    print(done, elapsed, cpu, "tqdm" if tqdm is not None else "no-tqdm")


asyncio.run(main())
