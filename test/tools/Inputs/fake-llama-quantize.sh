#!/bin/sh
# A stand-in for llama.cpp's llama-quantize in bench-compare.test:
# `--pure IN OUT TYPE` copies IN to OUT (Kiln then compiles an f32 file).
cp "$2" "$3"
