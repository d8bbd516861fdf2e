"""tinygrad's nn.optim over the C optimizers (tg_optimizer_*)."""
