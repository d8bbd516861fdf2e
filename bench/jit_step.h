/* bench_ops' JIT rows: a jitted MLP training step and a jitted tiny kernel, timed through the C API. */
#pragma once
/* median microseconds of one replayed training step of a 784-128-10 MLP (batch 64, Adam-like updates in the Tensor
 * API); `check_loss` receives the loss of the first and the last step (training must lower it) */
double jit_step_mlp_us(int steps, double* first_loss, double* last_loss);
/* median microseconds of one replayed tg_jit_call of x+1 on 16 floats (including releasing its output) */
double tiny_jit_replay_us(int runs);
