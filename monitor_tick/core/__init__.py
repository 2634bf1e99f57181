"""The tick's core: the clock, the pure schedule and incident rules, the values that cross module
borders (model), the tick itself and its fan-out."""
