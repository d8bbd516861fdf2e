// The module constructors (tinygrad's nn classes) and LSTMCell, whose call takes and returns a state.
#pragma once
#include <optional>

#include "nn/nn.h"

namespace tg::nn {

struct ConvArgs {
  int64_t in = 0, out = 0;
  Shape kernel;                                             // any number of spatial dims (1 for Conv1d, 2 for Conv2d, ...)
  Shape stride{1}, padding{0}, dilation{1}, output_padding{0};  // one value for every dim, or one per dim
  Tensor::PadPairs pads;  // when not empty: (before, after) per spatial dim, used instead of padding (negative crops)
  int64_t groups = 1;
  bool bias = true;
};

ModuleRef linear(int64_t in, int64_t out, bool bias, const std::string& dev);
ModuleRef conv(const ConvArgs& a, const std::string& dev);            // Conv1d / Conv2d
ModuleRef conv_transpose(const ConvArgs& a, const std::string& dev);  // ConvTranspose1d / ConvTranspose2d
ModuleRef batchnorm(int64_t sz, double eps, bool affine, bool track_running_stats, double momentum, const std::string& dev);
ModuleRef layernorm(const Shape& normalized, double eps, bool affine, const std::string& dev);
ModuleRef rmsnorm(int64_t dim, double eps, bool affine, const std::string& dev);
ModuleRef groupnorm(int64_t groups, int64_t channels, double eps, bool affine, const std::string& dev);
ModuleRef instancenorm(int64_t features, double eps, bool affine, const std::string& dev);
ModuleRef embedding(int64_t vocab, int64_t embed, const std::string& dev);
ModuleRef lstm_cell(int64_t in, int64_t hidden, bool bias, const std::string& dev);
ModuleRef function(const std::string& name);  // a parameterless layer: "relu", "gelu", "flatten", "max_pool2d", ...
ModuleRef sequential(std::vector<ModuleRef> layers);

class LSTMCell : public Module {
 public:
  LSTMCell(int64_t in, int64_t hidden, bool bias, const std::string& dev);
  // (h, c) after one step from state hc (zeros when absent)
  std::pair<Tensor, Tensor> step(const Tensor& x, const std::optional<std::pair<Tensor, Tensor>>& hc);
  Tensor forward(const Tensor& x) override { return step(x, std::nullopt).first; }
  std::string kind() const override { return "LSTMCell"; }
  Tensor weight_ih, weight_hh;
  std::optional<Tensor> bias_ih, bias_hh;

 protected:
  std::vector<Slot> slots() override;
  int64_t in_, hidden_;
};

}  // namespace tg::nn
