// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's own prompt processing on a GGUF file, the peer of `attnviz bench --model FILE` in
// tests/bench/gguf_table.py: npm's node-llama-cpp (llama.cpp prebuilt, CPU), one context of THREADS
// threads, N seeded token ids (ordinary ids, as attnviz's bench picks: past the first 1,000) evaluated
// in one batch from an empty history; a warm-up evaluation first, then REPEAT timed ones. Prints one
// JSON line: the load time, each run's milliseconds, and llama.cpp's release.
//   NLC_DIR=/tmp/gguf-npm node tests/bench/llamacpp_pp.mjs FILE [N 128] [REPEAT 3] [THREADS 2]
// (NLC_DIR: a folder whose node_modules holds node-llama-cpp 3.22.1, as for
// tests/fixtures/gguf/crosscheck_llamacpp.mjs.)
import path from 'node:path';
import {createRequire} from 'node:module';
import {performance} from 'node:perf_hooks';

const [file, nArg, repArg, thrArg] = process.argv.slice(2);
if (!file) {
    console.error('usage: node llamacpp_pp.mjs FILE [N] [REPEAT] [THREADS]');
    process.exit(2);
}
const n = Number(nArg || 128), repeat = Number(repArg || 3), threads = Number(thrArg || 2);
const require = createRequire(path.join(process.env.NLC_DIR || process.cwd(), 'x.js'));
const {getLlama, LlamaLogLevel} = await import(require.resolve('node-llama-cpp'));
const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error});
const t0 = performance.now();
const model = await llama.loadModel({modelPath: file, gpuLayers: 0});
const loadMs = performance.now() - t0;
const vocab = model.tokens.count ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? 32000;
// a small linear congruential generator: the same ids every run
let s = 5;
const ids = [];
for (let i = 0; i < n; ++i) {
    s = (s * 1103515245 + 12345) % 2147483648;
    ids.push(1000 + (s % Math.max(1, vocab - 1002)));
}
const context = await model.createContext({contextSize: Math.max(256, n + 64), batchSize: Math.max(512, n), threads});
const seq = context.getSequence();
const ms = [];
for (let r = 0; r <= repeat; ++r) {
    await seq.clearHistory();
    const a = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(ids);
    const t = performance.now() - a;
    if (r > 0)   // run 0 is the warm-up
        ms.push(t);
}
await context.dispose();
await model.dispose();
console.log(JSON.stringify({file: path.basename(file), tokens: n, threads, load_ms: loadMs, ms,
                            llama_cpp: llama.llamaCppRelease ?? null}));
