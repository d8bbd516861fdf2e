// tg_option_push / tg_option_pop: thread-local, nesting overrides of an option (tinygrad's Context).
#include <algorithm>
#include <thread>

#include "capi_handles.h"

namespace {
double opt(const char* name) {
  double v = -1;
  EXPECT_EQ(tg_get_option(name, &v), TG_OK) << tg_last_error_message();
  return v;
}
}  // namespace

TEST(OptionPush, NestsWinsOverSetOptionAndPopsBack) {
  OptionScope base("TRAINING", "0");
  ASSERT_EQ(tg_option_push("TRAINING", "1"), TG_OK) << tg_last_error_message();
  EXPECT_EQ(opt("TRAINING"), 1);
  ASSERT_EQ(tg_option_push("TRAINING", "0"), TG_OK);
  EXPECT_EQ(opt("TRAINING"), 0);
  EXPECT_EQ(tg_set_option("TRAINING", "1"), TG_OK);  // the process-wide value: the thread's override still wins
  EXPECT_EQ(opt("TRAINING"), 0);
  EXPECT_EQ(tg_option_pop(), TG_OK);
  EXPECT_EQ(opt("TRAINING"), 1);
  EXPECT_EQ(tg_option_pop(), TG_OK);
  EXPECT_EQ(opt("TRAINING"), 1);  // back to tg_set_option's
  EXPECT_EQ(tg_option_pop(), TG_ERROR_INVALID_ARGUMENT);  // nothing left to undo
  EXPECT_NE(std::string(tg_last_error_message()).find("option_pop"), std::string::npos);
}

TEST(OptionPush, BadNamesAndValuesPushNothing) {
  EXPECT_EQ(tg_option_push("NO_SUCH_OPTION", "1"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tg_last_error_message()).find("NO_SUCH_OPTION"), std::string::npos);
  EXPECT_EQ(tg_option_push(nullptr, "1"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_option_push("DEBUG", nullptr), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_option_push("DEBUG", "99"), TG_ERROR_INVALID_ARGUMENT);  // out of range
  EXPECT_EQ(tg_option_push("DEBUG", "1x"), TG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tg_option_pop(), TG_ERROR_INVALID_ARGUMENT);  // none of them pushed
}

TEST(OptionPush, OtherThreadsKeepTheirValues) {
  OptionScope base("TRAINING", "0");
  ASSERT_EQ(tg_option_push("TRAINING", "1"), TG_OK);
  double seen = -1, seen_pushed = -1;
  std::thread t([&] {
    tg_get_option("TRAINING", &seen);
    tg_option_push("TRAINING", "1");
    tg_get_option("TRAINING", &seen_pushed);
    tg_option_pop();
  });
  t.join();
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(seen_pushed, 1);
  EXPECT_EQ(opt("TRAINING"), 1);
  EXPECT_EQ(tg_option_pop(), TG_OK);
  EXPECT_EQ(opt("TRAINING"), 0);
}

// what the override changes: the dropout layer drops only in training, read when the layer is called
TEST(OptionPush, TrainingOverrideReachesTheOps) {
  OptionScope base("TRAINING", "0");
  std::vector<float> x(4096, 1.f);
  int64_t shape[] = {4096};
  T t = tg_tensor_from_data(x.data(), x.size() * sizeof(float), TG_FLOAT32, shape, 1, nullptr);
  M drop = tg_nn_function("dropout");
  T d = tg_module_call(drop, t);
  std::vector<float> out(x.size());
  ASSERT_EQ(tg_tensor_to_data(d, out.data(), out.size() * sizeof(float)), TG_OK) << tg_last_error_message();
  EXPECT_EQ(out, x);
  ASSERT_EQ(tg_option_push("TRAINING", "1"), TG_OK);
  T d2 = tg_module_call(drop, t);
  ASSERT_EQ(tg_option_pop(), TG_OK);
  ASSERT_EQ(tg_tensor_to_data(d2, out.data(), out.size() * sizeof(float)), TG_OK) << tg_last_error_message();
  size_t zeros = std::count(out.begin(), out.end(), 0.f), twos = std::count(out.begin(), out.end(), 2.f);
  EXPECT_EQ(zeros + twos, out.size());
  EXPECT_GT(zeros, 1500u);  // p = 0.5 of 4096
  EXPECT_GT(twos, 1500u);
}
