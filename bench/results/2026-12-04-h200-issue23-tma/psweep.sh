cd .device/ws
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv,noheader
python3 ../tma_check.py Pf16o_def.ptx Pf16o_def.small.json 1000 1496 528 f16 f16 2 2>&1 | head -1
python3 ../tma_check.py Ps8.ptx Ps8.small.json 1000 1496 528 s8 s32 2 2>&1 | head -1
run() { echo "== $1"; python3 ../tma_check.py $1.ptx $1.json 8192 8192 8192 $2 $3 20 2>&1 | tail -3; }
run f16o_np f16 f16
run Pf16o_def f16 f16
run Pf16o_p4 f16 f16
run bf16o_np bf16 bf16
run Pbf16o_def bf16 bf16
run f16o_np f16 f16
run Pf16o_def f16 f16
run Pf16 f16 f32
run Ptf32 f32 f32
run Ps8 s8 s32
run Pfp8 e4m3 bf16
