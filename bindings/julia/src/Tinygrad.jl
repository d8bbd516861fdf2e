"""
    Tinygrad

tinygrad's lazy tensors from Julia, over libtinygrad's C API (LibTinygrad, generated). Handles (Tensor, Layer,
Optimizer, State, SymExpr, Plan, Jit, Uop, OnnxModel, Llm, Comm) are mutable structs whose finalizer releases their reference; `release!(h)` does it
now (the mlp example does, to count live handles). Every failing call throws a TinygradError with the C status, its
name (`code`, "TG_ERROR_SHAPE") and the library's message.

Arrays cross in tinygrad's row-major order: `Tensor(a)` has shape `size(a)` and `Array(t)` gives back a Julia array of
`size(t)` with the same elements at the same indices. Operators follow tinygrad, not Julia's linear algebra: `*` is
elementwise (use `matmul`), `div` is integer division, `max`/`min` elementwise; comparisons are `lt`, `le`, ...
"""
module Tinygrad

include("LibTinygrad.jl")
using .LibTinygrad
const L = LibTinygrad

export Tensor, Layer, Optimizer, State, SymExpr, Plan, Jit, Uop, OnnxModel, Llm, Comm, TinygradError, release!, shape, dtype, item, full,
       Linear, Sequential, parameters, options, SGD, Adam, AdamW, LARS, LAMB, Muon, schedule_step, mean, variable,
       live_handles, manual_seed, version, state_names

# ---- errors ------------------------------------------------------------------------------------------------------------
struct TinygradError <: Exception
  status::Int32
  code::String
  message::String
end
TinygradError(status::Integer, message::AbstractString) =
  TinygradError(Int32(status), unsafe_string(L.tg_status_name(status)), String(message))
Base.showerror(io::IO, e::TinygradError) = print(io, "TinygradError ", e.code, ": ", e.message)

# The calling thread's last error. Read right after the failing call: a task moves between threads only where it
# yields, and nothing between the two ccalls yields.
last_error(status::Integer = L.tg_last_error()) =
  TinygradError(status == L.TG_OK ? L.TG_ERROR_INTERNAL : status, unsafe_string(L.tg_last_error_message()))
check(status::Integer) = status == L.TG_OK ? nothing : throw(last_error(status))
# a numeric result: `err` means failure, or (clear: 0 is also valid) the error set during the call does
function check_value(f, err, clear::Bool)
  clear && L.tg_clear_error()
  v = f()
  v == err && (!clear || L.tg_last_error() != L.TG_OK) && throw(last_error())
  return v
end
cstr(::Nothing) = C_NULL
cstr(s::AbstractString) = String(s)
cstring(p::Ptr{UInt8}) = p == C_NULL ? throw(last_error()) : unsafe_string(p)

# ---- handles -----------------------------------------------------------------------------------------------------------
for (T, rel) in ((:Tensor, :tg_tensor_release), (:SymExpr, :tg_expr_release), (:Layer, :tg_module_release),
                 (:Optimizer, :tg_optimizer_release), (:State, :tg_state_release), (:Plan, :tg_plan_release),
                 (:Uop, :tg_uop_release), (:OnnxModel, :tg_onnx_model_release), (:Llm, :tg_llm_release), (:Comm, :tg_comm_release))
  @eval begin
    mutable struct $T
      ptr::Ptr{Cvoid}
      # adopts a new reference from the C API; NULL is the call's failure
      function $T(p::Ptr{Cvoid})
        p == C_NULL && throw(last_error())
        return finalizer(release!, new(p))
      end
    end
    release!(h::$T) = (L.$rel(h.ptr); h.ptr = C_NULL; nothing)
    # a handle passes to ccall as its pointer, kept alive for the call
    Base.cconvert(::Type{Ptr{Cvoid}}, h::$T) = h
    Base.unsafe_convert(::Type{Ptr{Cvoid}}, h::$T) = h.ptr
  end
end
adopt(::Type{T}, p::Ptr{Cvoid}) where {T} = T(p)
ptrs(hs) = Ptr{Cvoid}[h.ptr for h in hs]

# ---- dtypes ------------------------------------------------------------------------------------------------------------
const DTYPES = Dict{DataType, Int32}(Bool => L.TG_BOOL, Int8 => L.TG_INT8, UInt8 => L.TG_UINT8, Int16 => L.TG_INT16,
  UInt16 => L.TG_UINT16, Int32 => L.TG_INT32, UInt32 => L.TG_UINT32, Int64 => L.TG_INT64, UInt64 => L.TG_UINT64,
  Float16 => L.TG_FLOAT16, Float32 => L.TG_FLOAT32, Float64 => L.TG_FLOAT64)
const ELTYPES = Dict{Int32, DataType}(v => k for (k, v) in DTYPES)  # bfloat16 has no Base type

function dtype(t::Tensor)
  r = Ref{Int32}(0)
  check(L.tg_tensor_dtype(t, r))
  return r[]
end
function Base.eltype(t::Tensor)
  d = dtype(t)
  haskey(ELTYPES, d) || throw(ArgumentError("no Julia element type for tinygrad's $(unsafe_string(L.tg_dtype_name(d)))"))
  return ELTYPES[d]
end
function shape(t::Tensor)
  n = check_value(() -> L.tg_tensor_ndim(t), -1, false)
  s = Vector{Int64}(undef, n)
  check(L.tg_tensor_shape(t, s, n))
  return Tuple(s)
end
Base.size(t::Tensor) = shape(t)
Base.ndims(t::Tensor) = Int(ndim(t))
Base.show(io::IO, t::Tensor) = t.ptr == C_NULL ? print(io, "Tensor(released)") :
  print(io, "Tensor(", shape(t), ", ", unsafe_string(L.tg_dtype_name(dtype(t))), ")")

# ---- data in and out ---------------------------------------------------------------------------------------------------
reversed(n) = ntuple(i -> n + 1 - i, n)
"A tensor holding a copy of `a` (shape `size(a)`), on `device` (nothing: the default)."
function Tensor(a::AbstractArray{T}; device = nothing) where {T}
  haskey(DTYPES, T) || throw(ArgumentError("no tinygrad dtype for $T"))
  data = ndims(a) <= 1 ? collect(a) : permutedims(a, reversed(ndims(a)))  # row-major: the last index fastest
  s = Int64[size(a)...]
  return GC.@preserve data s Tensor(L.tg_tensor_from_data(data, sizeof(data), DTYPES[T], s, length(s), cstr(device)))
end
Tensor(x::Number; device = nothing) = Tensor(fill(x); device = device)

function Base.Array(t::Tensor)
  s = shape(t)
  buf = Array{eltype(t)}(undef, reverse(s)...)
  check(L.tg_tensor_to_data(t, buf, sizeof(buf)))
  return length(s) <= 1 ? buf : permutedims(buf, reversed(length(s)))
end
function item(t::Tensor)
  a = Array(t)
  length(a) == 1 || throw(TinygradError(L.TG_ERROR_SHAPE, "item: the tensor has $(length(a)) elements, not 1"))
  return first(a)
end

full(dims, value::Real; dtype = L.TG_FLOAT32, device = nothing) =
  Tensor(L.tg_tensor_full(Int64[dims...], length(dims), value, dtype, cstr(device)))
for (f, c) in ((:zeros, :tg_tensor_zeros), (:ones, :tg_tensor_ones), (:rand, :tg_tensor_rand), (:randn, :tg_tensor_randn))
  @eval Base.$f(::Type{Tensor}, dims::Integer...; dtype = L.TG_FLOAT32, device = nothing) =
    Tensor(L.$c(Int64[dims...], length(dims), dtype, cstr(device)))
end

# ---- the ops the generic rule leaves out -------------------------------------------------------------------------------
include("ops.jl")

# a Julia number on the left: tinygrad's Python scalar (the tensor's dtype, float32 for a fraction and an int tensor)
function scalar_like(t::Tensor, x::Real)
  d = dtype(t)
  d in (L.TG_FLOAT16, L.TG_BFLOAT16, L.TG_FLOAT32, L.TG_FLOAT64) || isinteger(x) || (d = L.TG_FLOAT32)
  return full((), x; dtype = d, device = unsafe_string(L.tg_tensor_device(t)))
end
Base.:+(a::Real, b::Tensor) = b + a
Base.:*(a::Real, b::Tensor) = b * a
Base.:-(a::Real, b::Tensor) = scalar_like(b, a) - b
Base.:/(a::Real, b::Tensor) = scalar_like(b, a) / b

# reductions over `dims` (all by default), tinygrad's keepdim
for (f, c) in ((:(Base.sum), :tg_tensor_sum), (:(Base.prod), :tg_tensor_prod), (:(Base.maximum), :tg_tensor_max),
               (:(Base.minimum), :tg_tensor_min), (:mean, :tg_tensor_mean), (:(Base.any), :tg_tensor_any),
               (:(Base.all), :tg_tensor_all))
  @eval $f(t::Tensor; dims = (), keepdim::Bool = false) = Tensor(L.$c(t, Int64[dims...], length(dims), keepdim))
end
Base.reshape(t::Tensor, dims::Integer...) = Tensor(L.tg_tensor_reshape(t, Int64[dims...], length(dims)))
Base.permutedims(t::Tensor, perm) = Tensor(L.tg_tensor_permute(t, Int64[perm...], length(perm)))
Base.cat(ts::Tensor...; dims::Integer = 0) = GC.@preserve ts Tensor(L.tg_tensor_cat(ptrs(ts), length(ts), dims))
# realize several tensors in one schedule
realize(ts::AbstractVector{Tensor}) = GC.@preserve ts check(L.tg_tensor_realize_many(ptrs(ts), length(ts)))

# ---- nn ----------------------------------------------------------------------------------------------------------------
Linear(in::Integer, out::Integer; bias::Bool = true, device = nothing) = nn_linear(in, out, bias, device)
Sequential(layers::AbstractVector{Layer}) = GC.@preserve layers Layer(L.tg_nn_sequential(ptrs(layers), length(layers)))
(m::Layer)(x::Tensor) = module_call(m, x)
function parameters(m::Layer)
  out = Vector{Ptr{Cvoid}}(undef, module_parameter_count(m))
  check(L.tg_module_parameters(m, out, length(out)))
  return Tensor.(out)
end
function state_names(s::State)
  return [cstring(L.tg_state_name(s, i)) for i in 0:(state_count(s) - 1)]
end

# optimizer options: tinygrad's defaults for `kind`, with the given fields changed (lr = 0.1, momentum = 0.9, ...)
function options(kind::Integer; kw...)
  T = L.tg_optimizer_options
  buf = zeros(UInt8, sizeof(T))
  r = Ref(with(GC.@preserve(buf, unsafe_load(Ptr{T}(pointer(buf)))); struct_size = sizeof(T)))
  check(L.tg_optimizer_options_default(kind, r))
  return with(r[]; kw...)
end
with(v::T; kw...) where {T} = T((haskey(kw, f) ? convert(fieldtype(T, f), kw[f]) : getfield(v, f) for f in fieldnames(T))...)
for (name, kind, make) in ((:SGD, :TG_OPTIM_SGD, :tg_optim_sgd), (:Adam, :TG_OPTIM_ADAM, :tg_optim_adam),
                           (:AdamW, :TG_OPTIM_ADAMW, :tg_optim_adamw), (:LARS, :TG_OPTIM_LARS, :tg_optim_lars),
                           (:LAMB, :TG_OPTIM_LAMB, :tg_optim_lamb), (:Muon, :TG_OPTIM_MUON, :tg_optim_muon))
  @eval function $name(params::AbstractVector{Tensor}; kw...)
    o = Ref(options(L.$kind; kw...))
    return GC.@preserve params Optimizer(L.$make(ptrs(params), length(params), o))
  end
end
"The step's lazy assigns (state, then params): realize them with the loss for the fewest kernels."
function schedule_step(opt::Optimizer)
  n = check_value(() -> L.tg_optimizer_schedule_step(opt, C_NULL, 0), -1, false)
  out = Vector{Ptr{Cvoid}}(undef, n)
  n = check_value(() -> L.tg_optimizer_schedule_step(opt, out, n), -1, false)
  return Tensor.(out[1:n])
end

# ---- symbolic expressions ----------------------------------------------------------------------------------------------
variable(name::AbstractString, min::Integer, max::Integer) = expr_variable(name, min, max)
SymExpr(v::Integer) = expr_const(v)
for (op, code) in ((:+, :TG_ADD), (:-, :TG_SUB), (:*, :TG_MUL), (:div, :TG_IDIV), (:rem, :TG_MOD), (:max, :TG_MAX),
                   (:min, :TG_MIN))
  @eval Base.$op(a::SymExpr, b::SymExpr) = SymExpr(L.tg_expr_binary(L.$code, a, b))
  @eval Base.$op(a::SymExpr, b::Integer) = $op(a, SymExpr(b))
end
function Base.string(e::SymExpr)
  n = check_value(() -> L.tg_expr_render(e, C_NULL, 0), -1, false)
  buf = Vector{UInt8}(undef, n + 1)
  check_value(() -> L.tg_expr_render(e, buf, length(buf)), -1, false)
  return String(buf[1:n])
end
Base.show(io::IO, e::SymExpr) = print(io, "SymExpr(", string(e), ")")

# ---- TinyJit -----------------------------------------------------------------------------------------------------------
"""
    Jit(f)

A captured function: the first call runs `f(inputs::Tensor...)`, the second captures its kernels, later calls replay
them. `f` returns a Tensor or a tuple/vector of them; a TinygradError it throws is the call's error.
"""
mutable struct Jit
  ptr::Ptr{Cvoid}
  fn::Any
  function Jit(fn)
    j = new(C_NULL, fn)
    cb = @cfunction(jit_trampoline, Int32, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}, Csize_t, Ptr{Ptr{Cvoid}}, Csize_t))
    j.ptr = L.tg_jit_create(cb, pointer_from_objref(j))  # the object is the userdata: GC doesn't move objects
    j.ptr == C_NULL && throw(last_error())
    return finalizer(release!, j)
  end
end
release!(j::Jit) = (L.tg_jit_release(j.ptr); j.ptr = C_NULL; nothing)
Base.cconvert(::Type{Ptr{Cvoid}}, j::Jit) = j
Base.unsafe_convert(::Type{Ptr{Cvoid}}, j::Jit) = j.ptr
function jit_trampoline(ud::Ptr{Cvoid}, inputs::Ptr{Ptr{Cvoid}}, n_in::Csize_t, outputs::Ptr{Ptr{Cvoid}}, n_out::Csize_t)::Int32
  try
    j = unsafe_pointer_to_objref(ud)::Jit
    ins = [Tensor(L.tg_tensor_retain(unsafe_load(inputs, i))) for i in 1:n_in]
    outs = j.fn(ins...)
    outs isa Tensor && (outs = (outs,))
    length(outs) >= n_out || return L.TG_ERROR_INVALID_ARGUMENT  # on an error nothing may be written
    for i in 1:n_out
      unsafe_store!(outputs, L.tg_tensor_retain(outs[i]), i)
    end
    return L.TG_OK
  catch e
    return e isa TinygradError ? e.status : L.TG_ERROR_INTERNAL  # an exception may not unwind through C
  end
end
function (j::Jit)(inputs::Tensor...; n_outputs::Integer = 1)
  out = Vector{Ptr{Cvoid}}(undef, n_outputs)
  GC.@preserve inputs check(L.tg_jit_call(j, ptrs(inputs), length(inputs), out, n_outputs))
  return Tensor.(out)
end

# ---- process-wide ------------------------------------------------------------------------------------------------------
live_handles() = L.tg_live_handles()
manual_seed(seed::Integer) = L.tg_manual_seed(UInt64(seed))
version() = unsafe_string(L.tg_version())
set_option(name::AbstractString, value::Real) = set_option(name, string(value))

end # module
