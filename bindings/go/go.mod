module libtinygrad.org/tinygrad

go 1.19
