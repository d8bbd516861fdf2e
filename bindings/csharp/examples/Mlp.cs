// mlp_sgd in C#: the program of examples/c/mlp_sgd.c (read its top comment), through the Tinygrad classes. Its output
// must equal the C program's byte for byte.
using System;
using System.Globalization;
using System.Numerics;
using Tinygrad;

static class Mlp {
  const int N = 32, In = 8, Hid = 16, Out = 4, Steps = 20;

  static void Train() {
    var xs = new float[N * In];
    var ys = new int[N];
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < In; j++) xs[i * In + j] = (float)((double)((7 * i + 3 * j) % 11 - 5) / 5.0);
      ys[i] = (7 * i % 11) % 4;
    }
    using (var x = Tensor.FromArray(xs, new long[] { N, In }))
    using (var y = Tensor.FromArray(ys, new long[] { N }))
    using (var model = Sequential(Module.Linear(In, Hid, true), Module.Function("relu"), Module.Linear(Hid, Out, true))) {
      var o = Optimizer.OptionsDefault(OptimizerKind.Sgd);
      o.Lr = 0.1;
      var ps = model.Parameters();
      var opt = Optimizer.Sgd(ps, o);
      foreach (var p in ps) p.Dispose();
      using (opt) {
        for (int step = 1; step <= Steps; step++) {
          opt.ZeroGrad();
          using (var outp = model.Call(x))
          using (var loss = outp.SparseCategoricalCrossentropy(y, -1, 0.0, 1)) {
            loss.Backward();
            var upd = opt.ScheduleStep();
            var all = new Tensor[upd.Length + 1];
            all[0] = loss;
            upd.CopyTo(all, 1);
            Tensor.RealizeMany(all);
            float v = loss.Item<float>();
            Console.WriteLine($"step {step} loss {BitConverter.ToUInt32(BitConverter.GetBytes(v), 0):x8} {Fixed6(v)}");
            foreach (var u in upd) u.Dispose();
          }
        }
      }
    }
  }

  // the layers in order; the sequence keeps its own references, so ours go
  static Module Sequential(params Module[] layers) {
    try { return Module.Sequential(layers); } finally { foreach (var l in layers) l.Dispose(); }
  }

  static void BadMatmul() {
    using (var a = Tensor.Zeros(new long[] { 2, 3 }, DType.Float32))
    using (var b = Tensor.Zeros(new long[] { 4, 5 }, DType.Float32)) {
      try {
        a.Matmul(b).Dispose();
        throw new Exception("the bad matmul succeeded");
      } catch (TinygradException e) {
        Console.WriteLine($"error {e.CodeName}: {e.Message}");
      }
    }
  }

  // C's printf("%.6f"): the double's exact binary value rounded to 6 decimals, ties to even. .NET's "F6" rounds to
  // 15 significant digits first, which can differ in the last place.
  static string Fixed6(double d) {
    long bits = BitConverter.DoubleToInt64Bits(d);
    int exp = (int)((bits >> 52) & 0x7ff);
    var mant = new BigInteger(bits & 0xfffffffffffffL);
    if (exp == 0x7ff) return d.ToString(CultureInfo.InvariantCulture);  // nan, inf: not in this program's output
    if (exp != 0) mant += BigInteger.One << 52; else exp = 1;
    exp -= 1075;  // |d| = mant * 2^exp
    var num = mant * 1000000;
    BigInteger q;
    if (exp >= 0) q = num << exp;
    else {
      var den = BigInteger.One << -exp;
      q = BigInteger.DivRem(num, den, out var rem);
      int c = (rem * 2).CompareTo(den);
      if (c > 0 || (c == 0 && !q.IsEven)) q += 1;
    }
    var s = BigInteger.DivRem(q, 1000000, out var frac);
    return $"{(bits < 0 ? "-" : "")}{s}.{frac.ToString().PadLeft(6, '0')}";
  }

  static int Main() {
    Tg.ManualSeed(1337);
    Tg.SetOption("TRAINING", "1");
    Train();
    BadMatmul();
    Console.WriteLine($"live handles: {Tg.LiveHandles()}");
    return 0;
  }
}
