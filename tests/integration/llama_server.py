"""Run llama.cpp's OpenAI-compatible server (via xllamacpp) until stdin closes.

Usage: ``python llama_server.py MODEL.gguf TEMPLATE.jinja``. Prints the listening
address as its first stdout line once the model is loaded; closing stdin stops the
server, after which it prints ``stopped`` and exits 0. Running it as a separate
process keeps llama.cpp's threads and logs out of the test process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import xllamacpp

CONTEXT_TOKENS = 8192
# Cap on generated tokens per request: a base model rambles until the cap, and on
# one CPU thread each token costs ~30 ms.
MAX_PREDICT = 96


def main(model: str, template: str) -> None:
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.use_jinja = True
    params.chat_template = Path(template).read_text(encoding="utf-8")
    params.n_ctx = CONTEXT_TOKENS
    params.n_predict = MAX_PREDICT
    params.n_parallel = 1
    # One thread: two collapse when the machine's other core is busy.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    # Greedy decoding keeps runs reproducible.
    params.sampling.temp = 0.0
    params.sampling.seed = 7
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # llama.cpp picks a free loopback port
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()
    del server  # the destructor stops the HTTP server and the main loop
    print("stopped", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
