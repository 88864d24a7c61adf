#!/bin/sh
# Regenerates the synthetic multi-speaker clips in this directory (see PROVENANCE.md).
# Needs Debian's espeak-ng, flite and sox; the tests only read the committed .flac files.
set -eu
cd "$(dirname "$0")"
TEXTS="The quick brown fox jumps over the lazy dog near the river bank.
Please call Stella and ask her to bring these things with her from the store.
A large fleet of ships sailed slowly into the harbour before the storm.
We measured the temperature every morning for seven weeks in a row."
render() {  # render <speaker id> <engine> <args...>; writes <speaker>_<n>.flac, 16 kHz mono 16-bit
    spk=$1; engine=$2; shift 2
    n=0
    echo "$TEXTS" | while IFS= read -r line; do
        n=$((n + 1))
        tmp=$(mktemp --suffix=.wav)
        if [ "$engine" = espeak ]; then
            espeak-ng "$@" -w "$tmp" "$line"
        else
            flite -voice "$1" -t "$line" -o "$tmp"
        fi
        sox -D -G "$tmp" -r 16000 -c 1 -b 16 "${spk}_${n}.flac" rate -v
        rm -f "$tmp"
    done
}
render espeak_us_m1 espeak -v en-us+m1 -p 35 -s 160
render espeak_gb_f3 espeak -v en-gb+f3 -p 70 -s 150
render espeak_scot_m3 espeak -v en-gb-scotland+m3 -p 45 -s 170
render espeak_us_f1 espeak -v en-us+f1 -p 60 -s 140
render espeak_rp_m5 espeak -v en-gb-x-rp+m5 -p 25 -s 155
render espeak_car_f4 espeak -v en-029+f4 -p 80 -s 165
render espeak_nyc_m7 espeak -v en-us-nyc+m7 -p 50 -s 145
render espeak_gb_klatt espeak -v en-gb+klatt2 -p 55 -s 150
render flite_slt flite slt
render flite_rms flite rms
render flite_awb flite awb
render flite_kal16 flite kal16
