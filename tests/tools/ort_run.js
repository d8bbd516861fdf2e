// ONNX Runtime (the onnxruntime-node package under build/ort) run on one model, for the tests' and the benchmark's
// reference outputs and times. usage: node ort_run.js SPEC.json, where SPEC is
//   {"ort": dir of node_modules, "model": path, "threads": n, "runs": n, "warmup": n,
//    "inputs": [{"name", "type" (float32|int64|...), "dims", "file" (raw little-endian)}], "out_dir": dir}
// It writes each output's raw bytes to out_dir/NAME.bin and prints {"load_ms", "times_ms", "outputs": [{name, type, dims, file}]}.
const fs = require('fs');
const path = require('path');
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const ort = require(path.join(spec.ort, 'onnxruntime-node'));
const Arrays = {float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array, int8: Int8Array, uint8: Uint8Array,
                bool: Uint8Array, int16: Int16Array, uint16: Uint16Array};
(async () => {
  const opts = {intraOpNumThreads: spec.threads || 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential'};
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(spec.model, opts);
  const feeds = {};
  for (const i of spec.inputs) {
    const buf = fs.readFileSync(i.file);
    const A = Arrays[i.type];
    const data = new A(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    feeds[i.name] = new ort.Tensor(i.type, i.type === 'bool' ? Uint8Array.from(data) : data, i.dims);
  }
  let out = await session.run(feeds);
  const load_ms = Number(process.hrtime.bigint() - t0) / 1e6;  // session creation to the first output
  for (let k = 0; k < (spec.warmup || 0); k++) out = await session.run(feeds);
  const times = [];
  for (let k = 0; k < (spec.runs || 0); k++) {
    const s = process.hrtime.bigint();
    out = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  const outputs = [];
  for (const name of session.outputNames) {
    const t = out[name];
    const file = path.join(spec.out_dir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.bin');
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outputs.push({name, type: t.type, dims: t.dims, file});
  }
  process.stdout.write(JSON.stringify({load_ms, times_ms: times, outputs}));
})().catch(e => { process.stderr.write(String(e.stack || e) + '\n'); process.exit(1); });
