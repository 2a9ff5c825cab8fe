#!/usr/bin/env python3
"""Writes plan_lists.h: the two tensor lists of the board programs.

    python3 c-tests/board/gen_lists.py \\
        TFLM/tensorflow/lite/micro/models/person_detect.tflite > c-tests/board/plan_lists.h

nnm_board_list_100: 100 buffers from xorshift32 (Marsaglia 2003: x ^= x << 13;
x ^= x >> 17; x ^= x << 5; on 32 bits), seed 0x9E3779B9, three draws per
buffer in this order:
    size      = 16 * (1 + draw % 4096)           16 .. 65536, multiples of 16
    first_use = draw % 60                        steps 0 .. 59
    last_use  = first_use + draw % (60 - first_use)   first_use .. 59

nnm_board_list_person_detect: the 30 intermediate activation tensors of
TFLite Micro's person_detect model (tensorflow/lite/micro/models/
person_detect.tflite in tensorflow/tflite-micro: int8 MobileNet-v1 0.25,
96x96x1 input, 31 operators), read from the model file given as the
argument: the output of each operator but the last (the softmax writes the
model output), in operator order. The model input and output are left out.
Lifetimes are those TFLite Micro's AllocationInfoBuilder gives (micro_
allocation_info.cc): operator k runs at step k + 1, a tensor lives from the
step of the operator writing it to that of the last operator reading it.
Sizes are the tensors' bytes rounded up to 16, as MicroAllocator does before
AddBuffer (MicroArenaBufferAlignment()).

Needs only the Python standard library (a minimal FlatBuffers reader for the
few fields of the TFLite schema used here).
"""
import struct
import sys

SEED = 0x9E3779B9
COUNT = 100
STEPS = 60


def xorshift32(state):
    state ^= (state << 13) & 0xFFFFFFFF
    state ^= state >> 17
    state ^= (state << 5) & 0xFFFFFFFF
    return state


def random_list():
    state = SEED
    out = []

    def draw():
        nonlocal state
        state = xorshift32(state)
        return state

    for _ in range(COUNT):
        size = 16 * (1 + draw() % 4096)
        first = draw() % STEPS
        last = first + draw() % (STEPS - first)
        out.append((size, first, last, None))
    return out


class FlatBuffer:
    """Reads tables, vectors and scalars of a FlatBuffers file."""

    def __init__(self, data):
        self.data = data

    def u8(self, pos):
        return self.data[pos]

    def u32(self, pos):
        return struct.unpack_from("<I", self.data, pos)[0]

    def i32(self, pos):
        return struct.unpack_from("<i", self.data, pos)[0]

    def root(self):
        return self.u32(0)

    def field(self, table, index):
        """Position of field `index` of the table at `table`, or None."""
        vtable = table - self.i32(table)
        vtable_size = struct.unpack_from("<H", self.data, vtable)[0]
        if 4 + 2 * index >= vtable_size:
            return None
        offset = struct.unpack_from("<H", self.data, vtable + 4 + 2 * index)[0]
        return table + offset if offset else None

    def vector(self, pos):
        start = pos + self.u32(pos)
        return start + 4, self.u32(start)

    def tables(self, table, index):
        pos = self.field(table, index)
        if pos is None:
            return []
        start, n = self.vector(pos)
        return [start + 4 * k + self.u32(start + 4 * k) for k in range(n)]

    def ints(self, table, index):
        pos = self.field(table, index)
        if pos is None:
            return []
        start, n = self.vector(pos)
        return [self.i32(start + 4 * k) for k in range(n)]

    def string(self, table, index):
        pos = self.field(table, index)
        if pos is None:
            return ""
        start, n = self.vector(pos)
        return self.data[start:start + n].decode()

    def scalar(self, table, index, read, default=0):
        pos = self.field(table, index)
        return default if pos is None else read(pos)


# tflite schema: field indices and element sizes of the types used.
MODEL_SUBGRAPHS, MODEL_BUFFERS = 2, 4
SUBGRAPH_TENSORS, SUBGRAPH_INPUTS, SUBGRAPH_OUTPUTS, SUBGRAPH_OPERATORS = 0, 1, 2, 3
TENSOR_SHAPE, TENSOR_TYPE, TENSOR_BUFFER, TENSOR_NAME = 0, 1, 2, 3
OPERATOR_INPUTS, OPERATOR_OUTPUTS = 1, 2
BUFFER_DATA = 0
TYPE_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1}  # FLOAT32 .. INT8


def person_detect_list(path):
    fb = FlatBuffer(open(path, "rb").read())
    model = fb.root()
    subgraph = fb.tables(model, MODEL_SUBGRAPHS)[0]
    buffers = fb.tables(model, MODEL_BUFFERS)
    tensors = fb.tables(subgraph, SUBGRAPH_TENSORS)
    operators = fb.tables(subgraph, SUBGRAPH_OPERATORS)
    model_inputs = fb.ints(subgraph, SUBGRAPH_INPUTS)
    model_outputs = fb.ints(subgraph, SUBGRAPH_OUTPUTS)

    def info(t):
        table = tensors[t]
        shape = fb.ints(table, TENSOR_SHAPE)
        kind = fb.scalar(table, TENSOR_TYPE, fb.u8)
        buffer = buffers[fb.scalar(table, TENSOR_BUFFER, fb.u32)]
        constant = fb.field(buffer, BUFFER_DATA) is not None and fb.vector(fb.field(buffer, BUFFER_DATA))[1] > 0
        n = TYPE_BYTES[kind]
        for d in shape:
            n *= d
        return shape, n, constant, fb.string(table, TENSOR_NAME)

    # AllocationInfoBuilder::MarkAllocationLifetimes, one subgraph.
    first, last = {}, {}
    for t in model_inputs:
        first[t] = last[t] = 0
    for k, op in enumerate(operators):
        step = k + 1
        for t in fb.ints(op, OPERATOR_OUTPUTS):
            first.setdefault(t, step)
        for t in fb.ints(op, OPERATOR_INPUTS):
            if t >= 0:
                last[t] = step
        for t in fb.ints(op, OPERATOR_OUTPUTS):
            last[t] = step
    for t in model_outputs:
        first.setdefault(t, len(operators))
        last[t] = len(operators)

    out = []
    for op in operators:
        for t in fb.ints(op, OPERATOR_OUTPUTS):
            if t in model_outputs:
                continue
            shape, nbytes, constant, name = info(t)
            assert not constant, name
            size = (nbytes + 15) // 16 * 16
            shape_text = "x".join(str(d) for d in shape)
            out.append((size, first[t], last[t], "%s, %s, %d B" % (name, shape_text, nbytes)))
    assert len(operators) == 31 and len(out) == 30, (len(operators), len(out))
    return out


def emit(name, rows, lines):
    lines.append("#define %s_COUNT %d" % (name.upper(), len(rows)))
    lines.append("static const nnm_board_buffer %s[%d] NNM_BOARD_MAYBE_UNUSED = {" % (name, len(rows)))
    for size, first, last, comment in rows:
        entry = "    {%d, %d, %d}," % (size, first, last)
        if comment:
            entry = "%-24s /* %s */" % (entry, comment)
        lines.append(entry)
    lines.append("};")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_lists.py PATH/TO/person_detect.tflite > plan_lists.h")
    lines = [
        "/*",
        " * Generated by c-tests/board/gen_lists.py; do not edit. Regenerate with",
        " *   python3 c-tests/board/gen_lists.py \\",
        " *     TFLM/tensorflow/lite/micro/models/person_detect.tflite > c-tests/board/plan_lists.h",
        " *",
        " * Two deterministic tensor lists for planner measurements. Steps are",
        " * inclusive (TFLite Micro's first_time_used/last_time_used convention);",
        " * sizes in bytes. How each list is made is described in gen_lists.py:",
        " *",
        " * nnm_board_list_100: 100 buffers from xorshift32 (seed 0x9E3779B9):",
        " *   sizes 16..65536 in multiples of 16, first_use <= last_use, all within",
        " *   steps 0..59.",
        " * nnm_board_list_person_detect: the 30 intermediate activation tensors of",
        " *   TFLite Micro's person_detect model (tensorflow/tflite-micro,",
        " *   tensorflow/lite/micro/models/person_detect.tflite: int8 MobileNet-v1",
        " *   0.25, 96x96x1), read from the model file: each operator's output but",
        " *   the model's (the softmax's), in operator order; model input and output",
        " *   left out. Lifetimes as TFLite Micro's AllocationInfoBuilder marks them",
        " *   (operator k at step k + 1; from the writing operator to the last",
        " *   reader); sizes rounded up to 16 as MicroAllocator does before AddBuffer.",
        " *   Each comment: tensor name, shape, bytes before rounding.",
        " */",
        "#ifndef NNM_BOARD_PLAN_LISTS_H",
        "#define NNM_BOARD_PLAN_LISTS_H",
        "",
        "typedef struct {",
        "  int size;",
        "  int first_use;",
        "  int last_use;",
        "} nnm_board_buffer;",
        "",
        "/* A C file that uses one list must not warn about the other. */",
        "#if defined(__GNUC__)",
        "#define NNM_BOARD_MAYBE_UNUSED __attribute__((unused))",
        "#else",
        "#define NNM_BOARD_MAYBE_UNUSED",
        "#endif",
        "",
    ]
    emit("nnm_board_list_100", random_list(), lines)
    lines.append("")
    emit("nnm_board_list_person_detect", person_detect_list(sys.argv[1]), lines)
    lines += ["", "#endif", ""]
    sys.stdout.write("\n".join(lines))


if __name__ == "__main__":
    main()
