// mlp_sgd through tinygrad.hpp: the recipe of examples/c/mlp_sgd.c (see its top comment) with the same library calls
// in the same order, so the output matches the C program's byte for byte.
#include <tinygrad.hpp>

#include <cstdio>
#include <cstring>

using namespace tinygrad;

static void train() {
  constexpr int64_t N = 32, IN = 8, HID = 16, OUT = 4, STEPS = 20;
  std::vector<float> xs(N * IN);
  std::vector<int32_t> ys(N);
  for (int64_t i = 0; i < N; i++) {
    for (int64_t j = 0; j < IN; j++) xs[i * IN + j] = static_cast<float>(static_cast<double>((7 * i + 3 * j) % 11 - 5) / 5.0);
    ys[i] = static_cast<int32_t>((7 * i % 11) % 4);
  }
  Tensor x = Tensor::from_vector(xs, {N, IN}), y = Tensor::from_vector(ys);
  // a braced list is evaluated left to right: the layers draw their random weights in the C program's order
  Module model = nn::sequential({nn::linear(IN, HID), nn::function("relu"), nn::linear(HID, OUT)});
  OptimizerOptions o = optimizer_defaults(Optim::SGD);
  o.lr = 0.1;
  Optimizer opt = Optimizer::sgd(model.parameters(), o);
  for (int step = 1; step <= STEPS; step++) {
    opt.zero_grad();
    Tensor loss = model(x).sparse_categorical_crossentropy(y);
    loss.backward();
    std::vector<Tensor> all{loss};
    for (auto& t : opt.schedule_step()) all.push_back(std::move(t));
    realize(all);
    float v = loss.item<float>();
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    std::printf("step %d loss %08x %.6f\n", step, bits, static_cast<double>(v));
  }
}

int main() {
  try {
    manual_seed(1337);
    set_option("TRAINING", 1);
    train();
    try {
      Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
      a.matmul(b);
      std::fprintf(stderr, "the bad matmul succeeded\n");
      return 1;
    } catch (const Error& e) {
      std::printf("error %s: %s\n", e.code_name(), e.what());
    }
    std::printf("live handles: %lld\n", static_cast<long long>(live_handles()));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", e.code_name(), e.what());
    return 1;
  }
  return 0;
}
