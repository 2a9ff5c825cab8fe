/*
 * TensorFlow Lite Micro's GreedyMemoryPlanner's offsets for the two lists
 * of plan_lists.h: figures measured by c-tests/board/measure-tflm-greedy.sh
 * (TFLite Micro 90b983c2, arm-none-eabi-g++ 12.2 -Os, on mps2-an386 and on
 * Cortex-M0+ code; identical on both). Figures only, no TFLite Micro code.
 * nnmem's NNM_ALGORITHM_TFLM must give these offsets and arena sizes.
 */
#ifndef NNM_BOARD_TFLM_OFFSETS_H
#define NNM_BOARD_TFLM_OFFSETS_H

#include <stdint.h>

#define TFLM_ARENA_PERSON_DETECT 55296u
#define TFLM_ARENA_100 1357696u

static const uint32_t tflm_offsets_person_detect[30] = {
    0, 36864, 0, 36864, 0, 18432, 0, 18432,
    0, 9216, 0, 9216, 0, 4608, 0, 4608,
    0, 4608, 0, 4608, 0, 4608, 0, 4608,
    0, 2304, 0, 2304, 16, 0,
};

static const uint32_t tflm_offsets_100[100] = {
    1153328, 884576, 696656, 485072, 848416, 60400, 417312, 52704,
    360048, 466912, 1316176, 172128, 466912, 1220976, 1280064, 973680,
    656272, 302736, 126816, 186096, 1240944, 52704, 0, 116048,
    1240944, 1260592, 947200, 150752, 245280, 1293024, 568016, 1153328,
    1044896, 0, 656272, 1337600, 186096, 920256, 519504, 397376,
    0, 417312, 117712, 126816, 186096, 1128016, 417312, 1101504,
    468480, 1350048, 920256, 501712, 360048, 468480, 100144, 0,
    237968, 0, 736864, 1256048, 111728, 1327040, 811904, 0,
    0, 1304688, 126816, 245280, 60400, 296560, 454944, 775040,
    511312, 1355984, 0, 0, 500320, 65520, 1178320, 1074016,
    1240944, 656272, 920256, 417312, 984848, 296560, 165600, 953824,
    117712, 1353968, 93136, 1346000, 1200432, 1015360, 736864, 0,
    612848, 245280, 104944, 57360,
};

#endif
