// The hand-written part of the C# binding: errors, handle arrays, and the functions whose C shape (raw bytes, counts
// asked first, a callback) has no generic form in Api.g.cs.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Runtime.ExceptionServices;
using System.Runtime.InteropServices;
using System.Text;

namespace Tinygrad {

/// <summary>A failed library call: the status, its name ("TG_ERROR_SHAPE") and the library's message.</summary>
public class TinygradException : Exception {
  public Status Status { get; }
  public string CodeName { get; }
  public TinygradException(Status status, string message) : base(message) {
    Status = status;
    CodeName = Native.Str(Native.tg_status_name(status));
  }
}

/// <summary>Implemented by every handle class: the SafeHandle that owns its reference.</summary>
public interface IHandle { SafeHandle Handle { get; } }

// Borrowed handle arrays: each SafeHandle is ref-counted for the call so a Dispose or finalizer can't free it mid-call.
sealed class HandleArray : IDisposable {
  public readonly IntPtr[] Ptrs;
  readonly SafeHandle[] held;
  int n;
  public HandleArray(IHandle[] hs) {
    if (hs == null) return;
    Ptrs = new IntPtr[hs.Length];
    held = new SafeHandle[hs.Length];
    try {
      for (; n < hs.Length; n++) {
        var h = Native.Arg(hs[n], "array element").Handle;
        bool ok = false;
        h.DangerousAddRef(ref ok);
        held[n] = h;
        Ptrs[n] = h.DangerousGetHandle();
      }
    } catch { Dispose(); throw; }
  }
  public void Dispose() {
    while (n > 0) held[--n].DangerousRelease();
  }
}

public static partial class Native {
  // Failures are read back on the calling thread, where the library keeps them.
  public static TinygradException Fail() => new TinygradException(tg_last_error(), Str(tg_last_error_message()));
  internal static void Check(Status s) {
    if (s != Status.Ok) throw Fail();
  }
  internal static T Check<T>(T h) where T : SafeHandle {
    if (!h.IsInvalid) return h;
    var e = Fail();
    h.Dispose();
    throw e;
  }
  internal static T Arg<T>(T v, string name) where T : class => v ?? throw new ArgumentNullException(name);
  internal static UIntPtr Size(long n) => n >= 0 ? (UIntPtr)(ulong)n : throw new ArgumentOutOfRangeException(nameof(n), n, "negative size");

  /// <summary>A library-owned UTF-8 string copied out (never freed here); null for NULL.</summary>
  public static unsafe string Str(IntPtr p) {
    if (p == IntPtr.Zero) return null;
    byte* b = (byte*)p;
    int n = 0;
    while (b[n] != 0) n++;
    return Encoding.UTF8.GetString(b, n);
  }

  // managed element types and the dtypes they hold
  static readonly Dictionary<Type, DType[]> dtypes = new Dictionary<Type, DType[]> {
    [typeof(bool)] = new[] { DType.Bool }, [typeof(sbyte)] = new[] { DType.Int8 }, [typeof(byte)] = new[] { DType.UInt8 },
    [typeof(short)] = new[] { DType.Int16 }, [typeof(ushort)] = new[] { DType.UInt16, DType.Float16, DType.BFloat16 },
    [typeof(int)] = new[] { DType.Int32 }, [typeof(uint)] = new[] { DType.UInt32 }, [typeof(long)] = new[] { DType.Int64 },
    [typeof(ulong)] = new[] { DType.UInt64 }, [typeof(float)] = new[] { DType.Float32 }, [typeof(double)] = new[] { DType.Float64 },
  };
  internal static DType[] DTypesOf(Type t) =>
    dtypes.TryGetValue(t, out var d) ? d : throw new ArgumentException($"no tinygrad dtype holds {t.Name} elements");
}

public sealed partial class Tensor {
  /// <summary>A tensor holding a copy of `data` (row-major) of the given shape, dtype and device (null: the default).
  /// The dtype must hold the array's element type: float for Float32, ushort bit patterns for Float16/BFloat16, ...
  /// </summary>
  public static Tensor FromArray(Array data, long[] shape, DType dtype, string device = null) {
    Native.Arg(data, nameof(data));
    if (Array.IndexOf(Native.DTypesOf(data.GetType().GetElementType()), dtype) < 0)
      throw new ArgumentException($"a {data.GetType().GetElementType().Name}[] can't hold {Tg.DTypeName(dtype)}");
    if (data is bool[] bs) data = Array.ConvertAll(bs, b => b ? (byte)1 : (byte)0);  // bool isn't blittable
    var pin = GCHandle.Alloc(data, GCHandleType.Pinned);
    try {
      var nbytes = (ulong)data.LongLength * (ulong)Tg.DTypeSize(dtype);
      return new Tensor(Native.Check(Native.tg_tensor_from_data(pin.AddrOfPinnedObject(), (UIntPtr)nbytes, dtype,
                                                                 shape, (UIntPtr)(shape?.Length ?? 0), device)));
    } finally { pin.Free(); }
  }
  public static Tensor FromArray(float[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.Float32, device);
  public static Tensor FromArray(double[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.Float64, device);
  public static Tensor FromArray(int[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.Int32, device);
  public static Tensor FromArray(long[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.Int64, device);
  public static Tensor FromArray(byte[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.UInt8, device);
  public static Tensor FromArray(bool[] data, long[] shape, string device = null) => FromArray(data, shape, Tinygrad.DType.Bool, device);

  /// <summary>The contents, realized and copied out row-major; T must match the dtype (ushort for Float16/BFloat16 bits).</summary>
  public T[] ToArray<T>() where T : struct {
    var dt = DType();
    if (Array.IndexOf(Native.DTypesOf(typeof(T)), dt) < 0)
      throw new ArgumentException($"ToArray<{typeof(T).Name}> of a {Tg.DTypeName(dt)} tensor: Cast it first");
    long n = Numel();
    Array r = typeof(T) == typeof(bool) ? new byte[n] : (Array)new T[n];
    var pin = GCHandle.Alloc(r, GCHandleType.Pinned);
    try {
      Native.Check(Native.tg_tensor_to_data(H, pin.AddrOfPinnedObject(), (UIntPtr)((ulong)n * (ulong)Tg.DTypeSize(dt))));
    } finally { pin.Free(); }
    return r is byte[] b && typeof(T) == typeof(bool) ? (T[])(object)Array.ConvertAll(b, x => x != 0) : (T[])r;
  }
  /// <summary>The one element of a one-element tensor.</summary>
  public T Item<T>() where T : struct {
    var a = ToArray<T>();
    return a.Length == 1 ? a[0] : throw new InvalidOperationException($"Item of a tensor of {a.Length} elements");
  }

  public long[] Shape() {
    var s = new long[Ndim()];
    Native.Check(Native.tg_tensor_shape(H, s, (UIntPtr)s.Length));
    return s;
  }
  public bool RequiresGrad {
    get {
      int r = Native.tg_tensor_requires_grad(H);
      return r >= 0 ? r == 1 : throw Native.Fail();
    }
    set => SetRequiresGrad(value);
  }

  /// <summary>Pieces of ceil(size / chunks) along dim, as torch.chunk (at most `chunks`).</summary>
  public Tensor[] Chunk(long chunks, long dim) {
    var o = new IntPtr[Math.Max(chunks, 0)];
    long n = Native.tg_tensor_chunk(H, chunks, dim, o, (UIntPtr)o.Length);
    if (n < 0) throw Native.Fail();
    return Array.ConvertAll(o.Prefix(n), h => new Tensor(new TensorHandle(h)));
  }

  /// <summary>t[i, Index.Slice(1, 3), Index.NewAxis]: basic indices give a view.</summary>
  [System.Runtime.CompilerServices.IndexerName("Select")]
  public Tensor this[params TensorIndex[] idx] => Getitem(idx);

  public static Tensor operator +(Tensor a, Tensor b) => a.Add(b);
  public static Tensor operator -(Tensor a, Tensor b) => a.Sub(b);
  public static Tensor operator *(Tensor a, Tensor b) => a.Mul(b);
  public static Tensor operator /(Tensor a, Tensor b) => a.Div(b);
  public static Tensor operator -(Tensor a) => a.Neg();
  public static Tensor operator +(Tensor a, double b) => a.AddScalar(b);
  public static Tensor operator -(Tensor a, double b) => a.SubScalar(b);
  public static Tensor operator *(Tensor a, double b) => a.MulScalar(b);
  public static Tensor operator /(Tensor a, double b) => a.DivScalar(b);
  public static Tensor operator +(double a, Tensor b) => b.AddScalar(a);
  public static Tensor operator *(double a, Tensor b) => b.MulScalar(a);
  // a - b and a / b with the scalar first: a tensor of `a` keeps the operation (and its rounding) the one asked for
  public static Tensor operator -(double a, Tensor b) {
    using (var t = b.FullLike(a)) return t.Sub(b);
  }
  public static Tensor operator /(double a, Tensor b) {
    using (var t = b.FullLike(a)) return t.Div(b);
  }

  // a new reference to a tensor the library lends (a jit function's input)
  internal static Tensor Borrow(IntPtr p) {
    var lent = new TensorHandle(p);
    try { return new Tensor(Native.Check(Native.tg_tensor_retain(lent))); } finally { lent.SetHandleAsInvalid(); }
  }

  public override string ToString() =>
    IsDisposed ? "Tensor(disposed)" : $"Tensor(({string.Join(", ", Shape())}{(Ndim() == 1 ? "," : "")}), {Tg.DTypeName(DType())}, {Device()})";
}

static class ArrayExt {
  public static T[] Prefix<T>(this T[] a, long n) {
    var r = new T[n];
    Array.Copy(a, r, n);
    return r;
  }
}

public sealed partial class Module {
  /// <summary>The parameters an optimizer updates, sharing the module's tensors.</summary>
  public Tensor[] Parameters() {
    var o = new IntPtr[ParameterCount()];
    Native.Check(Native.tg_module_parameters(H, o, (UIntPtr)o.Length));
    return Array.ConvertAll(o, h => new Tensor(new TensorHandle(h)));
  }
}

public sealed partial class Optimizer {
  /// <summary>tinygrad's schedule_step: one step assigned lazily; realize the tensors returned (with the loss), then
  /// dispose them.</summary>
  public Tensor[] ScheduleStep() => Counted((o, n) => Native.tg_optimizer_schedule_step(H, o, n));
  /// <summary>The params as the optimizer holds them (deduplicated).</summary>
  public Tensor[] Params() => Counted((o, n) => Native.tg_optimizer_params(H, o, n));
  Tensor[] Counted(Func<IntPtr[], UIntPtr, long> f) {
    long n = f(null, UIntPtr.Zero);  // the count only: nothing is assigned
    if (n < 0) throw Native.Fail();
    var o = new IntPtr[n];
    if (f(o, (UIntPtr)o.Length) != n) throw Native.Fail();
    return Array.ConvertAll(o, h => new Tensor(new TensorHandle(h)));
  }
}

public sealed partial class Expr {
  public override string ToString() {
    if (IsDisposed) return "Expr(disposed)";
    var buf = new byte[64];
    long n = Native.tg_expr_render(H, buf, (UIntPtr)buf.Length);
    if (n >= buf.Length) Native.tg_expr_render(H, buf = new byte[n + 1], (UIntPtr)buf.Length);
    return n >= 0 ? Encoding.UTF8.GetString(buf, 0, (int)n) : throw Native.Fail();
  }
  public static Expr operator +(Expr a, Expr b) => Binary(BinOp.Add, a, b);
  public static Expr operator -(Expr a, Expr b) => Binary(BinOp.Sub, a, b);
  public static Expr operator *(Expr a, Expr b) => Binary(BinOp.Mul, a, b);
  public static Expr operator /(Expr a, Expr b) => Binary(BinOp.Idiv, a, b);
  public static Expr operator %(Expr a, Expr b) => Binary(BinOp.Mod, a, b);
  public static Expr operator +(Expr a, long b) => With(a, BinOp.Add, b);
  public static Expr operator -(Expr a, long b) => With(a, BinOp.Sub, b);
  public static Expr operator *(Expr a, long b) => With(a, BinOp.Mul, b);
  public static Expr operator /(Expr a, long b) => With(a, BinOp.Idiv, b);
  public static Expr operator %(Expr a, long b) => With(a, BinOp.Mod, b);
  static Expr With(Expr a, BinOp op, long b) {
    using (var c = Const(b)) return Binary(op, a, c);
  }
}

public sealed partial class State {
  /// <summary>The tensors of a safetensors or GGUF file held in memory (copied).</summary>
  public static State LoadMemory(byte[] data, string name = null, string device = null) {
    var pin = GCHandle.Alloc(Native.Arg(data, nameof(data)), GCHandleType.Pinned);
    try {
      return new State(Native.Check(Native.tg_state_load_memory(pin.AddrOfPinnedObject(), (UIntPtr)data.Length, name, device)));
    } finally { pin.Free(); }
  }
  /// <summary>The dtype and shape of entry `name`, without realizing it.</summary>
  public unsafe (DType dtype, long[] shape) Info(string name) {
    DType dt;
    long nd;
    Native.Check(Native.tg_state_info(H, name, &dt, null, UIntPtr.Zero, &nd));
    var s = new long[nd];
    Native.Check(Native.tg_state_info(H, name, &dt, s, (UIntPtr)s.Length, &nd));
    return (dt, s);
  }
  public string[] Names() {
    var r = new string[Count()];
    for (int i = 0; i < r.Length; i++) r[i] = Name(i);
    return r;
  }
}

/// <summary>One kernel of a plan, copied out of the library.</summary>
public sealed class Kernel {
  public string Name, Source;
  public long[] BufferNbytes;
  public double TimeS;
  public long Threads;
  public ulong Ops, Mem;
}

public sealed partial class Plan {
  public Kernel[] Kernels() {
    var r = new Kernel[KernelCount()];
    for (int i = 0; i < r.Length; i++) {
      var k = Kernel(i);
      var nb = new long[(long)k.NBuffers.ToUInt64()];
      if (nb.Length > 0) Marshal.Copy(k.BufferNbytes, nb, 0, nb.Length);
      r[i] = new Kernel { Name = Native.Str(k.Name), Source = Native.Str(k.Source), BufferNbytes = nb, TimeS = k.TimeS,
                          Threads = k.Threads, Ops = k.Ops, Mem = k.Mem };
    }
    return r;
  }
}

/// <summary>tinygrad's TinyJit around a C# function of tensors. The function gets the inputs (valid during the call)
/// and returns `outputs` tensors, which the JIT takes over (it disposes them after taking its own references). An
/// exception it throws is rethrown by Call.</summary>
public sealed partial class Jit {
  readonly JitFn trampoline;  // referenced here: the library holds only its function pointer
  readonly Func<Tensor[], Tensor[]> fn;
  readonly int outputs;
  Exception pending;

  public Jit(Func<Tensor[], Tensor[]> fn, int outputs = 1) {
    this.fn = Native.Arg(fn, nameof(fn));
    this.outputs = outputs >= 0 ? outputs : throw new ArgumentOutOfRangeException(nameof(outputs));
    trampoline = Run;
    H = Native.Check(Native.tg_jit_create(trampoline, IntPtr.Zero));
  }

  Status Run(IntPtr userdata, IntPtr inputs, UIntPtr nInputs, IntPtr outs, UIntPtr nOutputs) {
    var ins = new Tensor[(long)nInputs.ToUInt64()];
    Tensor[] res = null;
    try {
      for (int i = 0; i < ins.Length; i++)
        ins[i] = Tensor.Borrow(Marshal.ReadIntPtr(inputs, i * IntPtr.Size));
      res = fn(ins) ?? new Tensor[0];
      if (res.Length != (long)nOutputs.ToUInt64())
        throw new InvalidOperationException($"the jit function returned {res.Length} tensors, {nOutputs} expected");
      var refs = new TensorHandle[res.Length];
      for (int i = 0; i < res.Length; i++) refs[i] = Native.Check(Native.tg_tensor_retain(Native.Arg(res[i], "output").H));
      for (int i = 0; i < res.Length; i++) {  // written only when all are made: on an error none may be written
        Marshal.WriteIntPtr(outs, i * IntPtr.Size, refs[i].DangerousGetHandle());
        refs[i].SetHandleAsInvalid();
      }
      return Status.Ok;
    } catch (Exception e) {
      pending = e;
      return e is TinygradException te && te.Status != Status.Ok ? te.Status : Status.ErrorInvalidArgument;
    } finally {
      foreach (var t in ins) t?.Dispose();
      if (res != null) foreach (var t in res) t?.Dispose();
    }
  }

  /// <summary>Runs (first two calls) or replays the function; the outputs are new tensors of this call.</summary>
  public Tensor[] Call(params Tensor[] inputs) {
    var o = new IntPtr[outputs];
    Status s;
    pending = null;
    using (var a = new HandleArray(inputs)) s = Native.tg_jit_call(H, a.Ptrs, (UIntPtr)(inputs?.Length ?? 0), o, (UIntPtr)o.Length);
    GC.KeepAlive(this);
    if (s != Status.Ok) {
      var e = pending;
      pending = null;
      if (e != null) ExceptionDispatchInfo.Capture(e).Throw();
      throw Native.Fail();
    }
    return Array.ConvertAll(o, h => new Tensor(new TensorHandle(h)));
  }
}

public static partial class Tg {
  /// <summary>Set a library option (DEBUG, BEAM, TRAINING, JIT, ...) to a number; ResetOption forgets it.</summary>
  public static void SetOption(string name, double value) => SetOption(name, value.ToString("R", CultureInfo.InvariantCulture));
  public static void ResetOption(string name) => SetOption(name, null);
}
}

namespace Tinygrad {
/// <summary>Index entries for Tensor.Getitem / Setitem: t[1, 2:8:2, None, ...].</summary>
public partial struct TensorIndex {
  public static TensorIndex At(long i) => new TensorIndex { Kind = IndexKind.Int, Start = i };
  public static TensorIndex Slice(long? start = null, long? stop = null, long? step = null) => new TensorIndex {
    Kind = IndexKind.Slice, Start = start ?? 0, Stop = stop ?? 0, Step = step ?? 0,
    HasStart = start.HasValue ? 1 : 0, HasStop = stop.HasValue ? 1 : 0, HasStep = step.HasValue ? 1 : 0 };
  public static readonly TensorIndex NewAxis = new TensorIndex { Kind = IndexKind.NewAxis };
  public static readonly TensorIndex Ellipsis = new TensorIndex { Kind = IndexKind.Ellipsis };
}
}
