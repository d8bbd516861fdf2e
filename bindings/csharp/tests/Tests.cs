// The C# binding's tests: a plain executable (no test framework here). Each public static void method of Tests is a
// test; it fails by throwing. Exit code 1 if any failed.
using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.CompilerServices;
using Tinygrad;
using Module = Tinygrad.Module;

static class Tests {
  static void Eq<T>(T want, T got, string what = "") {
    if (!Equals(want, got)) throw new Exception($"{what}: want {want}, got {got}");
  }
  static void Eq<T>(T[] want, T[] got, string what = "") {
    if (!want.SequenceEqual(got)) throw new Exception($"{what}: want [{string.Join(", ", want)}], got [{string.Join(", ", got)}]");
  }
  static void Close(float[] want, float[] got, float tol = 1e-5f) {
    if (want.Length != got.Length || want.Zip(got, (a, b) => Math.Abs(a - b) <= tol * (1 + Math.Abs(a))).Any(ok => !ok))
      throw new Exception($"want [{string.Join(", ", want)}], got [{string.Join(", ", got)}]");
  }
  static E Throws<E>(Action f) where E : Exception {
    try { f(); } catch (E e) { return e; }
    throw new Exception($"no {typeof(E).Name} thrown");
  }
  // handles alive once the garbage tensors of earlier code are finalized
  static long Live() {
    for (int i = 0; i < 2; i++) {
      GC.Collect();
      GC.WaitForPendingFinalizers();
    }
    return Tg.LiveHandles();
  }
  static Tensor F(float[] v, params long[] shape) => Tensor.FromArray(v, shape);

  public static void Elementwise() {
    using (var a = F(new[] { 1f, 2, 3, 4 }, 2, 2))
    using (var b = F(new[] { 10f, 20, 30, 40 }, 2, 2)) {
      Close(new[] { 11f, 22, 33, 44 }, (a + b).ToArray<float>());
      Close(new[] { 10f, 40, 90, 160 }, (a * b).ToArray<float>());
      Close(new[] { 9f, 18, 27, 36 }, (b - a).ToArray<float>());
      Close(new[] { 0.1f, 0.1f, 0.1f, 0.1f }, (a / b).ToArray<float>());
      Close(new[] { -1f, -2, -3, -4 }, (-a).ToArray<float>());
      Close(new[] { 3f, 5, 7, 9 }, (a * 2.0 + 1.0).ToArray<float>());
      Close(new[] { 0f, -1, -2, -3 }, (1.0 - a).ToArray<float>());
      Close(new[] { 12f, 6, 4, 3 }, (12.0 / a).ToArray<float>());
      Close(new[] { 1f, 4, 9, 16 }, a.Square().ToArray<float>());
      Eq(new[] { false, true, false, true }, a.Gt(F(new[] { 1f, 1, 5, 3 }, 2, 2)).ToArray<bool>(), "gt");
    }
  }

  public static void ReduceMoveMatmul() {
    using (var a = F(new[] { 1f, 2, 3, 4, 5, 6 }, 2, 3)) {
      Close(new[] { 6f, 15 }, a.Sum(new long[] { 1 }, false).ToArray<float>());
      Eq(new long[] { 2, 1 }, a.Sum(new long[] { -1 }, true).Shape(), "keepdim shape");
      Close(new[] { 21f }, a.Sum(null, false).ToArray<float>());
      Eq(new long[] { 3, 2 }, a.Permute(1, 0).Shape(), "permute");
      Close(new[] { 1f, 4, 2, 5, 3, 6 }, a.Transpose(0, 1).Contiguous().ToArray<float>());
      Close(new[] { 14f, 32, 32, 77 }, a.Matmul(a.Transpose(0, 1)).ToArray<float>());
      Eq(new long[] { 6 }, a.Reshape(-1).Shape(), "reshape");
      Close(new[] { 2f, 3, 5, 6 }, a[TensorIndex.Slice(), TensorIndex.Slice(1)].ToArray<float>());
      Eq(new long[] { 1, 3 }, a[TensorIndex.At(-1), TensorIndex.NewAxis].Shape(), "index");
      var sm = a.StdMean(null, false, 1);
      Close(new[] { 3.5f }, sm[1].ToArray<float>());
      Close(new[] { (float)Math.Sqrt(3.5) }, sm[0].ToArray<float>());
      var parts = a.Split(new long[] { 1, 2 }, 1);
      Eq(new long[] { 2, 2 }, parts[1].Shape(), "split");
      Eq(2, a.Chunk(3, 0).Length, "chunk count");
    }
  }

  public static void Dtypes() {
    using (var i = Tensor.FromArray(new[] { 7, -7 }, new long[] { 2 })) {
      Eq(DType.Int32, i.DType(), "dtype");
      Eq(new[] { 3, -3 }, i.Idiv(Tensor.FromArray(new[] { 2, 2 }, new long[] { 2 })).ToArray<int>(), "idiv truncates");
      Eq(new[] { 7.0, -7.0 }, i.Cast(DType.Float64).ToArray<double>(), "cast");
      Eq(new long[] { 0, 1, 2 }, Tensor.Arange(0, 3, 1, DType.Int64).ToArray<long>(), "arange");
      Eq(new ushort[] { 0x3c00 }, Tensor.FromArray(new ushort[] { 0x3c00 }, new long[] { 1 }, DType.Float16).ToArray<ushort>(), "half bits");
      Throws<ArgumentException>(() => i.ToArray<float>());
      Throws<ArgumentException>(() => Tensor.FromArray(new[] { 1f }, new long[] { 1 }, DType.Int32));
      Eq(42L, Tensor.Full(new long[0], 42, DType.Int64).Item<long>(), "item");
      Eq(DType.Float32, Tg.DTypePromote(DType.Int32, DType.Float32), "promote");
      Eq("float32", Tg.DTypeName(DType.Float32), "name");
      Eq("Tensor((2,), int32, CPU)", i.ToString(), "ToString");
    }
  }

  public static void Errors() {
    using (var a = Tensor.Zeros(new long[] { 2, 3 }, DType.Float32))
    using (var b = Tensor.Zeros(new long[] { 4, 5 }, DType.Float32)) {
      var e = Throws<TinygradException>(() => a.Matmul(b));
      Eq(Status.ErrorShape, e.Status, "status");
      Eq("TG_ERROR_SHAPE", e.CodeName, "code name");
      Eq("matmul: shapes (2,3) and (4,5) don't match", e.Message, "message");
      e = Throws<TinygradException>(() => a.Reshape(7));
      Eq(Status.ErrorShape, e.Status, "reshape");
    }
    var d = Throws<TinygradException>(() => Tensor.Zeros(new long[] { 1 }, DType.Float32, "nødev"));
    Eq("TG_ERROR_DEVICE", d.CodeName, "device");
    if (!d.Message.Contains("NøDEV")) throw new Exception("the device message lost its UTF-8: " + d.Message);
    var o = Throws<TinygradException>(() => Tg.SetOption("NO_SUCH_OPTION", 1));
    Eq(Status.ErrorInvalidArgument, o.Status, "option");
    if (!o.Message.Contains("NO_SUCH_OPTION")) throw new Exception(o.Message);
    Throws<ArgumentNullException>(() => Tensor.Zeros(new long[] { 1 }, DType.Float32).Add(null));
    // a size result that may be 0: the stale error from above must not be taken for a failure
    using (var relu = Module.Function("relu")) Eq(0L, relu.ParameterCount(), "parameter count");
    Eq("TG_ERROR_IO", Tg.StatusName(Status.ErrorIo), "status name");
  }

  public static void DisposeReleases() {
    long start = Live();
    var a = Tensor.Ones(new long[] { 3 }, DType.Float32);
    var b = a + a;
    Eq(start + 2, Tg.LiveHandles(), "two alive");
    b.Dispose();
    a.Dispose();
    a.Dispose();  // twice is harmless
    Eq(start, Tg.LiveHandles(), "all released");
    Eq(true, a.IsDisposed, "IsDisposed");
    Throws<ObjectDisposedException>(() => a.Neg());
    Throws<ObjectDisposedException>(() => Tensor.Stack(new[] { a }, 0));
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Leak(int n) {
    for (int i = 0; i < n; i++) {
      var t = (Tensor.Ones(new long[] { 2 }, DType.Float32) * 3.0).Neg();
      if (t.IsDisposed) throw new Exception("disposed early");
    }
  }
  public static void FinalizerReleases() {
    long start = Live();
    Leak(10);
    if (Tg.LiveHandles() < start + 30) throw new Exception("the leaked tensors are not counted");
    Eq(start, Live(), "after GC");
  }

  public static void Expressions() {
    using (var n = Expr.Variable("n", 1, 10))
    using (var e = (n * 4 + 2) / 2) {
      Eq(15L, e.Eval(new[] { "n" }, 7), "eval");
      var (lo, hi) = e.Bounds();
      Eq(3L, lo, "min");
      Eq(21L, hi, "max");
      using (var s = e.Simplify()) Eq("((n*2)+1)", s.ToString(), "render");
      Eq(Status.ErrorInvalidArgument, Throws<TinygradException>(() => e.Eval(new string[0])).Status, "unbound");
      Eq(Status.ErrorInvalidArgument, Throws<TinygradException>(() => (n % 0).Dispose()).Status, "mod 0");
      Throws<ArgumentException>(() => e.Eval(new[] { "n", "m" }, 1));
    }
    using (var u = Expr.Variable("ünï", 0, 3)) Eq("ünï", u.ToString(), "utf-8 name");
  }

  public static void Jit() {
    long start = Live();
    int calls = 0;
    using (var jit = new Jit(ins => { calls++; return new[] { ins[0] * 2.0 + ins[1] }; })) {
      for (int i = 0; i < 4; i++) {
        using (var x = F(new[] { i, 1f }, 2))
        using (var y = F(new[] { 1f, 1f }, 2)) {
          var o = jit.Call(x, y);
          Close(new[] { 2f * i + 1, 3 }, o[0].ToArray<float>());
          o[0].Dispose();
        }
      }
      Eq(2, calls, "function runs twice, then replays");
      Eq(4L, jit.CallCount(), "call count");
      using (var p = jit.Plan()) if (p.Kernels().Length == 0) throw new Exception("captured no kernels");
    }
    using (var bad = new Jit(ins => throw new InvalidOperationException("from the function")))
    using (var x = F(new[] { 1f }, 1))
      Eq("from the function", Throws<InvalidOperationException>(() => bad.Call(x)).Message, "rethrown");
    using (var bad = new Jit(ins => new Tensor[0], 1))
    using (var x = F(new[] { 1f }, 1))
      Throws<InvalidOperationException>(() => bad.Call(x));
    Eq(start, Live(), "jit released everything");
  }

  public static void ModulesAndOptimizers() {
    long start = Live();
    Tg.ManualSeed(7);
    using (var lin = Module.Linear(3, 2, true)) {
      Eq("Linear", lin.Kind(), "kind");
      var ps = lin.Parameters();
      Eq(2, ps.Length, "params");
      Eq(new long[] { 2, 3 }, ps[0].Shape(), "weight shape");
      using (var st = lin.State()) Eq(new[] { "weight", "bias" }, st.Names(), "state names");
      using (var w = lin.Get("weight")) w.Assign(Tensor.Ones(new long[] { 2, 3 }, DType.Float32));
      using (var bias = lin.Get("bias")) bias.Assign(Tensor.Zeros(new long[] { 2 }, DType.Float32));
      using (var x = F(new[] { 1f, 2, 3 }, 1, 3)) Close(new[] { 6f, 6 }, lin.Call(x).ToArray<float>());
      Tg.SetOption("TRAINING", 1);
      var o = Optimizer.OptionsDefault(OptimizerKind.Sgd);
      o.Lr = 0.5;
      using (var opt = Optimizer.Sgd(ps, o)) {
        Eq(2, opt.Params().Length, "optimizer params");
        using (var x = F(new[] { 1f, 2, 3 }, 1, 3)) lin.Call(x).Sum(null, false).Backward();
        opt.Step();
        Close(new[] { 0.5f, 0, -0.5f, 0.5f, 0, -0.5f }, ps[0].ToArray<float>());
        Close(new[] { -0.5f, -0.5f }, ps[1].ToArray<float>());
        Close(new[] { 0.5f }, opt.Lr().ToArray<float>());
      }
      Tg.ResetOption("TRAINING");
      foreach (var p in ps) p.Dispose();
    }
    Eq(Status.ErrorInvalidArgument, Throws<TinygradException>(() => Module.Linear(0, 2, true)).Status, "bad size");
    Eq(start, Live(), "released");
  }

  public static void StateRoundTrip() {
    var path = Path.Combine(Path.GetTempPath(), $"tg_cs_{Process.GetCurrentProcess().Id}.safetensors");
    try {
      using (var s = State.Create())
      using (var t = Tensor.FromArray(new[] { 1, 2, 3, 4, 5, 6 }, new long[] { 2, 3 })) {
        s.Set("t", t);
        s.MetadataSet("by", "c#");
        s.Save(path);
      }
      using (var s = State.LoadMemory(File.ReadAllBytes(path), "mem")) {
        Eq(1L, s.Count(), "count");
        var (dt, shape) = s.Info("t");
        Eq(DType.Int32, dt, "dtype");
        Eq(new long[] { 2, 3 }, shape, "shape");
        using (var t = s.Get("t")) Eq(new[] { 1, 2, 3, 4, 5, 6 }, t.ToArray<int>(), "values");
        Eq("c#", s.MetadataValue(0), "metadata");
        Eq(Status.ErrorInvalidArgument, Throws<TinygradException>(() => s.Get("nope")).Status, "unknown name");
      }
      Eq(Status.ErrorIo, Throws<TinygradException>(() => State.LoadMemory(new byte[] { 1, 2, 3 })).Status, "garbage");
    } finally { File.Delete(path); }
  }

  public static void PlansAndCounters() {
    Tg.CountersReset();
    using (var a = F(new[] { 1f, 2 }, 2))
    using (var b = (a + 1.0).Exp())
    using (var p = Plan.Create(b)) {
      var ks = p.Kernels();
      if (ks.Length == 0 || ks[0].Name.Length == 0 || ks[0].Source.Length == 0) throw new Exception("no kernel info");
      p.Run();
      Eq(Status.ErrorInvalidArgument, Throws<TinygradException>(() => p.Run()).Status, "second run");
      Close(new[] { (float)Math.Exp(2), (float)Math.Exp(3) }, b.ToArray<float>());
    }
    if (Tg.CountersGet().KernelCount == 0) throw new Exception("no kernels counted");
  }

  public static void MlpMatchesC() {
    var build = Environment.GetEnvironmentVariable("TINYGRAD_BUILD");
    var c = Run(Path.Combine(build, "example_mlp_sgd"), "");
    var cs = Run("mono", Path.Combine(AppDomain.CurrentDomain.BaseDirectory, "Mlp.exe"));
    if (c != cs) throw new Exception($"outputs differ:\n--- C\n{c}--- C#\n{cs}");
    if (!cs.EndsWith("live handles: 0\n")) throw new Exception("the C# mlp leaked: " + cs);
  }
  static string Run(string exe, string args) {
    var p = Process.Start(new ProcessStartInfo(exe, args) { UseShellExecute = false, RedirectStandardOutput = true });
    var o = p.StandardOutput.ReadToEnd();
    p.WaitForExit();
    if (p.ExitCode != 0) throw new Exception($"{exe} {args} exited with {p.ExitCode}");
    return o;
  }

  static int Main(string[] args) {
    int failed = 0, ran = 0;
    foreach (var m in typeof(Tests).GetMethods(BindingFlags.Public | BindingFlags.Static)) {
      if (args.Length > 0 && !args.Contains(m.Name)) continue;
      ran++;
      var sw = Stopwatch.StartNew();
      try {
        m.Invoke(null, null);
        Console.WriteLine($"ok   {m.Name} ({sw.ElapsedMilliseconds} ms)");
      } catch (TargetInvocationException e) {
        failed++;
        Console.WriteLine($"FAIL {m.Name}: {e.InnerException}");
      }
    }
    Console.WriteLine($"{ran - failed} passed, {failed} failed");
    return failed == 0 ? 0 : 1;
  }
}
