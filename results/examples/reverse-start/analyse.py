"""Where a greedy Reverse decoding starts and how long it stays right (docs/results.md, "What a
decoding of length 400 looks like"). inL.txt: 20 random inputs of L digits, made with

    python -c "import random; r = random.Random(7)
    for L in (40, 60, 80, 100, 150, 200, 300, 400):
        open(f'in{L}.txt', 'w').writelines(''.join(r.choice('0123456789') for _ in range(L)) + '\\n' for _ in range(20))"

outL.txt: `ut generate results/models/algorithmic-prenorm/reverse-ut-act-prenorm-hnorm --input-file inL.txt
--threads 1 > outL.txt`. Run from this folder: `python analyse.py`. Per length: the shift (how many
digits of the reversed input the decoding skips at its start, the best match over its first ten
digits), how many digits it then gets right in a row, and the length it writes."""

from collections import Counter
from statistics import median

for length in (40, 60, 80, 100, 150, 200, 300, 400):
    inputs = open(f"in{length}.txt").read().split()
    outputs = open(f"out{length}.txt").read().split("\n")[: len(inputs)]
    shifts, runs = [], []
    for source, output in zip(inputs, outputs):
        target = source[::-1]

        def matches(shift: int) -> int:
            return sum(0 <= i + shift < len(target) and output[i] == target[i + shift] for i in range(min(10, len(output))))

        shift = max(range(-3, 8), key=matches)
        run = 0
        while run < len(output) and run + shift < len(target) and output[run] == target[run + shift]:
            run += 1
        shifts.append(shift)
        runs.append(run)
    print(f"length {length}: shifts {dict(sorted(Counter(shifts).items()))}, right in a row (median) {median(runs)}, "
          f"written (median) {median(len(o) for o in outputs)}")
