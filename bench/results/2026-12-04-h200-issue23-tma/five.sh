cd .device/ws
run() { echo "== $1"; python3 ../tma_check.py $1.ptx $1.json 5000 5000 5000 f16 f16 20 2>&1 | tail -3; }
run S5_sm80
run NP5_f16o_def
run P5_def
run P5_sw4
run P5_sw16
run P5_p4
run NP5_f16o_def
run P5_def
