# mlp_sgd through Tinygrad.jl: the recipe of examples/c/mlp_sgd.c (see its top comment) with the same library calls in
# the same order, so the output matches the C program's byte for byte. Run: julia --project=bindings/julia mlp.jl
using Printf
include(joinpath(@__DIR__, "..", "src", "Tinygrad.jl"))
using .Tinygrad

function train()
  N, IN, HID, OUT, STEPS = 32, 8, 16, 4, 20
  xs = [Float32(((7i + 3j) % 11 - 5) / 5.0) for i in 0:N-1, j in 0:IN-1]  # (N, IN), computed in double as in C
  ys = Int32[(7i % 11) % 4 for i in 0:N-1]
  x, y = Tensor(xs), Tensor(ys)
  layers = [Linear(IN, HID), Tinygrad.nn_function("relu"), Linear(HID, OUT)]  # made in this order: the weights' draws
  model = Sequential(layers)
  foreach(release!, layers)
  params = parameters(model)
  opt = SGD(params; lr = 0.1)
  foreach(release!, params)
  for step in 1:STEPS
    Tinygrad.optimizer_zero_grad(opt)
    out = model(x)
    loss = Tinygrad.sparse_categorical_crossentropy(out, y, -1, 0.0, 1)
    Tinygrad.backward(loss)
    upd = schedule_step(opt)
    Tinygrad.realize(vcat([loss], upd))
    v = item(loss)::Float32
    @printf("step %d loss %08x %.6f\n", step, reinterpret(UInt32, v), Float64(v))
    foreach(release!, upd)
    release!(loss)
    release!(out)
  end
  foreach(release!, (opt, model, x, y))
end

function bad_matmul()
  a, b = zeros(Tensor, 2, 3), zeros(Tensor, 4, 5)
  try
    Tinygrad.matmul(a, b)
    error("the bad matmul succeeded")
  catch e
    e isa TinygradError || rethrow()
    println("error ", e.code, ": ", e.message)
  end
  release!(a)
  release!(b)
end

manual_seed(1337)
Tinygrad.set_option("TRAINING", 1)
train()
bad_matmul()
println("live handles: ", live_handles())
