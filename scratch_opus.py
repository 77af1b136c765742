import time, numpy as np, torch, sys
sys.path.insert(0, '.')
from benchmarks.bench_pack_real_size import OPUS_MT
from model import TransformerConfig, build_model
from model.analysis.onnx_export import export_step_graphs, step_names
from model.analysis.pack_weights import half_rounded, shared_weights, sessions
torch.set_num_threads(1)
cfg = TransformerConfig(**OPUS_MT)
m = half_rounded(build_model(cfg, seed=0))
t0=time.time(); g = export_step_graphs(m); print("export", time.time()-t0, {k: len(v)/1e6 for k,v in g.items()})
t0=time.time(); g2, blob = shared_weights(g); print("share", time.time()-t0, {k: len(v)/1e6 for k,v in g2.items()}, len(blob)/1e6)
t0=time.time(); runs = sessions(g2, blob); print("sessions", time.time()-t0)
names = step_names(m)
sys.path.insert(0,'tests')
from tests.test_onnx_export import step_loop
src=[int(i) for i in np.random.default_rng(0).integers(1,58000,29)]+[0]
for _ in range(2):
    t0=time.time(); enc, written, steps = step_loop(runs, names, cfg, src, limit=30); print("30 steps", time.time()-t0, len(written))
open('/tmp/opus_graphs.npz','wb').write(blob)
