# The Julia binding's tests (run with a Julia toolchain: julia --project=bindings/julia bindings/julia/test/runtests.jl).
using Test
include(joinpath(@__DIR__, "..", "src", "Tinygrad.jl"))
using .Tinygrad
const T = Tinygrad

start = live_handles()
@testset "Tinygrad.jl" begin
  @testset "data round trip" begin
    a = Float32[1 2 3; 4 5 6]
    t = Tensor(a)
    @test size(t) == (2, 3)
    @test Array(t) == a
    @test Array(T.transpose(t, 0, 1)) == permutedims(a)
    @test eltype(Tensor(Int32[1, 2])) == Int32
    @test item(Tensor(2.5)) == 2.5
  end
  @testset "operators" begin
    a, b = Tensor(Float32[1, 2, 4]), Tensor(Float32[2, 4, 8])
    @test Array(a + b) == Float32[3, 6, 12]
    @test Array(a - b) == Float32[-1, -2, -4]
    @test Array(a * b) == Float32[2, 8, 32]
    @test Array(a / b) == Float32[0.5, 0.5, 0.5]
    @test Array(2 * a + 1) == Float32[3, 5, 9]
    @test Array(10 - a) == Float32[9, 8, 6]
    @test Array(8 / a) == Float32[8, 4, 2]
    @test Array(-a) == Float32[-1, -2, -4]
    @test Array(exp2(a)) == Float32[2, 4, 16]
    @test Array(T.lt(a, b)) == [true, true, true]
    @test Array(sum(Tensor(Float32[1 2; 3 4]); dims = (0,))) == Float32[4, 6]
    @test Array(T.matmul(Tensor(Float32[1 2; 3 4]), Tensor(Float32[5 6; 7 8]))) == Float32[19 22; 43 50]
  end
  @testset "errors" begin
    e = try
      T.matmul(zeros(Tensor, 2, 3), zeros(Tensor, 4, 5))
      nothing
    catch err
      err
    end
    @test e isa TinygradError
    @test e.code == "TG_ERROR_SHAPE"
    @test e.message == "matmul: shapes (2,3) and (4,5) don't match"
    @test_throws TinygradError reshape(zeros(Tensor, 2, 3), 4, 2)
  end
  @testset "jit" begin
    calls = Ref(0)
    j = Jit(x -> (calls[] += 1; x * 2 + 1))
    for v in 1:4
      @test Array(j(Tensor(Float32[v]))[1]) == Float32[2v + 1]
    end
    @test calls[] == 2
  end
  @testset "mlp matches the C program" begin
    build = get(ENV, "TINYGRAD_BUILD", joinpath(@__DIR__, "..", "..", "..", "build"))
    c = read(`$(joinpath(build, "example_mlp_sgd"))`, String)
    jl = read(`$(Base.julia_cmd()) $(joinpath(@__DIR__, "..", "examples", "mlp.jl"))`, String)
    @test jl == c
  end
end
GC.gc(); GC.gc()  # finalizers release what the tests dropped
@test live_handles() == start
