"""tinygrad's nn.state over the C state API (tg_state_*)."""
