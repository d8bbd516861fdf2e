/* The Fashion-MNIST model shared by train_fashion_mnist.c and classify.c: the same layers, so the trainer's
 * safetensors file loads into the classifier's model by name ("0.weight", "0.bias", "2.weight", "2.bias"). */
#ifndef FASHION_MNIST_MODEL_H
#define FASHION_MNIST_MODEL_H
#include <tinygrad.h>

#define FASHION_HIDDEN 512

static const char* const fashion_classes[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* 784 -> FASHION_HIDDEN -> 10, ReLU between: a new reference, or NULL with the error set */
static inline tg_module* fashion_model(void) {
  tg_module* layers[3] = {tg_nn_linear(784, FASHION_HIDDEN, 1, NULL), tg_nn_function("relu"), tg_nn_linear(FASHION_HIDDEN, 10, 1, NULL)};
  tg_module* m = layers[0] && layers[1] && layers[2] ? tg_nn_sequential(layers, 3) : NULL;
  for (int i = 0; i < 3; i++) tg_module_release(layers[i]);
  return m;
}

/* uint8 images (N, 1, 28, 28) -> float (N, 784) in [0, 1] (lazy) */
static inline tg_tensor* fashion_images(tg_tensor* u8) {
  tg_tensor* flat = tg_tensor_flatten(u8, 1, -1);
  tg_tensor* f = flat ? tg_tensor_cast(flat, TG_FLOAT32) : NULL;
  tg_tensor* x = f ? tg_tensor_div_scalar(f, 255.0) : NULL;
  tg_tensor_release(flat), tg_tensor_release(f);
  return x;
}

/* the predicted class of each image (N,) int32 (lazy) */
static inline tg_tensor* fashion_predict(tg_module* model, tg_tensor* x) {
  tg_tensor* logits = tg_module_call(model, x);
  tg_tensor* pred = logits ? tg_tensor_argmax(logits, 1, 0, 0) : NULL;
  tg_tensor_release(logits);
  return pred;
}

/* the share of images whose predicted class is the label, as a 0-d float tensor (lazy; NULL with the error set) */
static inline tg_tensor* fashion_accuracy_tensor(tg_module* model, tg_tensor* x, tg_tensor* labels) {
  tg_tensor* pred = fashion_predict(model, x);
  tg_tensor* y = labels ? tg_tensor_cast(labels, TG_INT32) : NULL;
  tg_tensor* hit = pred && y ? tg_tensor_eq(pred, y) : NULL;
  tg_tensor* hf = hit ? tg_tensor_cast(hit, TG_FLOAT32) : NULL;
  tg_tensor* acc = hf ? tg_tensor_mean(hf, NULL, 0, 0) : NULL;
  tg_tensor_release(pred), tg_tensor_release(y), tg_tensor_release(hit), tg_tensor_release(hf);
  return acc;
}

/* the share of images whose predicted class is the label, or -1 with the error set */
static inline double fashion_accuracy(tg_module* model, tg_tensor* x, tg_tensor* labels) {
  tg_tensor* acc = fashion_accuracy_tensor(model, x, labels);
  float a = -1;
  if (!acc || tg_tensor_to_data(acc, &a, sizeof a) != TG_OK) a = -1;
  tg_tensor_release(acc);
  return a;
}
#endif
