module shootout/examples/go-counter

go 1.19
