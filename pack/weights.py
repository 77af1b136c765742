"""The weights of a large pack's graphs: stored once, in float16, beside the graphs (ONNX external data).

    model16 = half_rounded(model)                 # the model with every parameter rounded to float16
    graphs, blob = shared_weights(export_step_graphs(model16))

`shared_weights` rewrites each graph so that its large initializers live in one shared file (ONNX external data,
location WEIGHTS): a tensor that several graphs hold (the shared embedding table in the encoder and in the step
graph) is stored once, a matrix that is the transpose of another one of its graph (the tied output layer, which the
exporter's constant folding stores beside the embedding table) becomes a Transpose node of it, and a float32 tensor
whose every value is a float16 number is stored as float16 followed by a Cast to float32. The graphs still compute
in float32: with the parameters rounded first (`half_rounded`), they compute exactly what the rounded model computes,
so parity against that model keeps the float32 tolerance, and the file is half the float32 size.
"""

from __future__ import annotations

import copy
import hashlib

import numpy as np
import torch
from torch import nn

WEIGHTS = "weights.bin"  # the external data's location in every graph (the page hands the bytes under this name)
MIN_EXTERNAL = 1024  # bytes: smaller tensors stay inside their graph
ALIGN = 64


def half_rounded(model: nn.Module) -> nn.Module:
    """A copy of `model` whose parameters are rounded to float16 (and kept as float32 tensors); buffers unchanged."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.dtype == torch.float32:
                p.copy_(p.half().float())
    return model


def _exact_half(a: np.ndarray) -> bool:
    return a.dtype == np.float32 and a.size > 0 and bool(np.array_equal(a.astype(np.float16).astype(np.float32), a))


def shared_weights(graphs: dict[str, bytes]) -> tuple[dict[str, bytes], bytes]:
    """(graphs without their large initializers, the one file that holds them): see the module docstring."""
    import onnx
    from onnx import helper, numpy_helper

    protos = {k: onnx.load_from_string(v) for k, v in graphs.items()}
    digest = lambda a: hashlib.sha256(a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()).hexdigest()  # noqa: E731
    seen: dict[str, int] = {}  # in how many graphs each tensor is
    for proto in protos.values():
        for d in {digest(numpy_helper.to_array(t)) for t in proto.graph.initializer}:
            seen[d] = seen.get(d, 0) + 1
    blob, where = bytearray(), {}  # digest -> (offset, length)
    out = {}
    for name, proto in protos.items():
        graph = proto.graph
        arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        new_nodes, drop = [], set()
        # a matrix that is another's transpose: a Transpose node of the one more graphs hold
        mats = [
            (n, a) for n, a in arrays.items() if a.ndim == 2 and a.dtype == np.float32 and a.size * 4 >= MIN_EXTERNAL
        ]
        for i, (n1, a1) in enumerate(mats):
            for n2, a2 in mats[i + 1 :]:
                if n1 in drop or n2 in drop or a1.shape != a2.shape[::-1] or not np.array_equal(a1.T, a2):
                    continue
                keep, other = (n1, n2) if seen[digest(a1)] >= seen[digest(a2)] else (n2, n1)
                drop.add(other)
                new_nodes.append(helper.make_node("Transpose", [keep], [other], perm=[1, 0], name=f"{other}/transpose"))
        inits = []
        for t in graph.initializer:
            if t.name in drop:
                continue
            a = arrays[t.name]
            stored, cast = a, False
            if _exact_half(a) and a.size * 4 >= MIN_EXTERNAL:
                stored, cast = a.astype(np.float16), True
            tensor = numpy_helper.from_array(stored, t.name + ("/float16" if cast else ""))
            if stored.nbytes >= MIN_EXTERNAL:
                d = digest(stored)
                if d not in where:
                    blob.extend(b"\0" * (-len(blob) % ALIGN))
                    where[d] = (len(blob), stored.nbytes)
                    blob.extend(stored.tobytes())
                offset, length = where[d]
                tensor.ClearField("raw_data")
                tensor.data_location = onnx.TensorProto.EXTERNAL
                for key, value in (("location", WEIGHTS), ("offset", str(offset)), ("length", str(length))):
                    entry = tensor.external_data.add()
                    entry.key, entry.value = key, value
            inits.append(tensor)
            if cast:
                new_nodes.append(
                    helper.make_node("Cast", [tensor.name], [t.name], to=onnx.TensorProto.FLOAT, name=f"{t.name}/cast")
                )
        del graph.initializer[:]
        graph.initializer.extend(inits)
        nodes = list(graph.node)
        del graph.node[:]
        graph.node.extend(new_nodes + nodes)  # the casts and transposes first: the graph stays topologically sorted
        out[name] = proto.SerializeToString()
    return out, bytes(blob)


def sessions(graphs: dict[str, bytes], blob: bytes) -> dict:
    """onnxruntime sessions (CPU, one thread) of graphs whose weights are in `blob` (as the page makes them)."""
    import onnxruntime as ort

    data = np.frombuffer(blob, dtype=np.uint8)
    runs = {}
    for name, graph in graphs.items():
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        runs[name] = _session_with_blob(graph, data, opts)
    return runs


def _session_with_blob(graph: bytes, data: np.ndarray, opts):
    """A session of a graph whose external data is `data`: the tensors put back inside the graph (Python's onnxruntime
    reads external data from files only), which is what the page's runtime does with the bytes it is handed."""
    import onnx
    import onnxruntime as ort

    proto = onnx.load_from_string(graph)
    for t in proto.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            start, length = int(info["offset"]), int(info["length"])
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT
            t.raw_data = data[start : start + length].tobytes()
    return ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
