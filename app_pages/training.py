"""Train and compare models on the small benchmarks or on a file of one's own, from the browser."""
from pathlib import Path

import streamlit as st

from disan.app import progress
from disan.app import training as glue
from disan.app.models import benchmark_label, entries, stamp
from disan.app.drawing import chart
from disan.app.widgets import kept
from disan.inspect import catalog
from disan.render import figures

SOURCES = ("a benchmark", "a file of your own")


def chosen_file() -> tuple[Path, str, object] | None:
    """A file of one's own, uploaded or picked among the uploads kept and the data folder's table files
    (never a path typed by a visitor): (its path, the name shown, the upload or None), or None (after saying
    why) while there is none. An upload's path is its temporary copy until :func:`disan.app.training.keep`
    keeps it."""
    how = st.radio("File", ["upload", "pick one kept on the server"], horizontal=True, key="train-file-how")
    if how == "upload":
        try:
            upload = glue.upload(f"A file to train on, kept in {glue.uploads_dir()} once it can be trained on",
                                 glue.TABLES, "train-upload")
        except ValueError as e:  # a bad DISAN_UPLOAD_MB, or a file over the bound
            st.error(str(e))
            return None
        if upload is None:
            glue.forget_staged()
            return None
        try:
            path = glue.kept_upload(upload) or glue.staged(upload)
        except glue.DataError as e:
            st.error(str(e))
            return None
        return path, f"{glue.UPLOADED}/{path.name}", upload
    listed, where = glue.offered_files()
    if not listed:
        st.info(f"No {', '.join(glue.TABLES)} file is kept on the server yet ({where}): upload one.")
        return None
    name = st.selectbox("File", list(listed), key="train-file", help=where)
    return listed[name], name, None


def own_data() -> dict | None:
    """A file of one's own: its first rows, its columns and kind, and its labels' balance. Returns the
    TrainConfig fields of the data, or None (after saying why) while there is nothing to train on."""
    found = chosen_file()
    if found is None:
        return None
    path, name, upload = found
    header = True
    if glue.asks_header(path):
        header = st.checkbox("The first row names the columns", True, key="train-header",
                             help="off: the columns are named by their 0-based index, as on the command line")
    try:
        table = glue.preview(path, header)
    except glue.DataError as e:
        st.error(glue.message(e, path, name))
        return None
    st.caption(f"The first {len(table)} rows of {name}")
    st.dataframe(table, hide_index=True, height=300)
    columns = list(table.columns)
    guess = glue.guess_columns(table)
    # another file or header: the pickers start again from their guesses (an upload stays the same file
    # once kept)
    what = (str(path) if upload is None else upload.file_id, header)
    kept("train-text", what, guess[0])
    kept("train-text-b", what, 0)
    kept("train-label", what, guess[1])
    c1, c2, c3, c4 = st.columns(4)
    text = c1.selectbox("Text column", columns, key="train-text")
    # by position, 0 for none: a None value would show as no choice made
    second = c2.selectbox("Second text column", range(len(columns) + 1), key="train-text-b",
                          format_func=lambda k: columns[k - 1] if k else "none (one text)",
                          help="the hypothesis of a pair (pair and relatedness models)")
    text_b = columns[second - 1] if second else None
    label = c3.selectbox("Label column", columns, key="train-label")
    kind = c4.selectbox("Kind", glue.kinds_for(text_b), key="train-kind",
                        help="classify takes one text; pair (classes) and relatedness (scores from 1 up) two")
    c1, c2, _, _ = st.columns(4)
    dev = c1.number_input("Dev fraction", 0.01, 0.5, glue.DEFAULT_FRACTION, 0.01, key="train-dev-fraction",
                          help="the share of the rows drawn as dev, stratified by label and seeded by the seed")
    test = c2.number_input("Test fraction", 0.01, 0.5, glue.DEFAULT_FRACTION, 0.01, key="train-test-fraction",
                           help="the share of the rows drawn as test, likewise")
    own = glue.data_fields(path, text, text_b, label, kind, dev, test)
    try:
        counted = glue.label_summary(own)
        if upload is not None:  # it can be trained on: kept where the run reads it
            own["data"] = str(glue.keep(upload))
    except glue.DataError as e:
        st.error(glue.message(e, path, name))
        return None
    fig = figures.label_balance(counted, name)
    chart(st, figures.describe(fig, f"{name} · label column {label}"), key="train-balance")
    st.caption(glue.split_caption(counted))
    return own


def start_form(own: dict | None) -> None:
    """The run's settings and its Start button, for a benchmark (``own`` None) or the data fields of a file."""
    # The defaults are a quick run (TREC, 5 epochs of Adam: a few minutes on two cores); the paper's
    # settings are Adadelta with lr 0.5 and many more epochs.
    with st.form("train-form"):
        c1, c2, c3 = st.columns(3)
        if own is None:
            task = c1.selectbox("Benchmark", glue.TRAINABLE, index=glue.TRAINABLE.index("trec"),
                                format_func=benchmark_label, key="train-task")
        else:
            task = None
            c1.text_input("Data", Path(own["data"]).name, disabled=True,
                          help=f"{own['kind']}: text {own['text_column']}"
                               + (f", second text {own['text_b_column']}" if own["text_b_column"] else "")
                               + f", label {own['label_column']}")
        encoder = c2.selectbox("Encoder", list(glue.ENCODERS), key="train-encoder")
        name = c3.text_input("Checkpoint name", "", key="train-name", help="default: task-encoder-time")
        c1, c2, c3, c4, c5 = st.columns(5)
        epochs = c1.number_input("Epochs", 1, 500, 5, key="train-epochs")
        patience = c2.number_input("Patience", 1, 500, glue.TrainConfig.patience, key="train-patience",
                                   help="epochs without a dev improvement before the run stops")
        lr = c3.number_input("Learning rate", 0.0001, 10.0, 0.001, format="%.4f", key="train-lr",
                             help="0.001 suits Adam; the paper's Adadelta uses 0.5")
        dropout = c4.number_input("Dropout", 0.0, 0.9, glue.TrainConfig.dropout, key="train-dropout")
        d_h = c5.number_input("d_h", 4, 600, glue.TrainConfig.d_h, key="train-dh")
        c1, c2, c3, c4 = st.columns(4)
        optimizer = c4.selectbox("Optimizer", list(glue.OPTIMIZERS), index=list(glue.OPTIMIZERS).index("adam"),
                                 key="train-optimizer",
                                 help="Adam (lr 0.001) needs few epochs on a CPU; Adadelta (lr 0.5) is the paper's")
        vectors = c1.text_input("Word vectors", "", key="train-vectors",
                                help="glove-100d (after `python -m disan vectors glove-100d`), glove-50d, or a "
                                     "GloVe-format text file; empty: glove-100d when fetched, else glove-50d")
        seed = c2.number_input("Seed", 0, 10_000, glue.TrainConfig.seed, key="train-seed")
        cap = c3.number_input("Cap on training examples (0 = all)", 0, 10_000_000, 0, key="train-cap")
        what = {item: text for item, text, _ in glue.RECIPE_ITEMS}
        items = st.multiselect("Items of the authors' SST recipe", list(what), format_func=lambda i: f"{i}: {what[i]}",
                               key="train-recipe",
                               help="each item sets its flags as the authors' SST code does, over the fields above "
                                    "(item 2 trains 120,000 steps; item 8 is for SST only)")
        probe = st.text_input("Probe sentence for the attention timeline", glue.PROBE, key="train-probe")
        st.caption(glue.saved_where())
        submitted = st.form_submit_button("Start", type="primary")
    if not submitted:
        return
    try:
        name = glue.checkpoint_name(name, encoder, task, own)
    except ValueError as e:
        st.error(str(e))
        return
    try:
        cfg = glue.train_config(name, own, items, task=task, encoder=encoder, epochs=epochs, patience=patience,
                                lr=lr, optimizer=optimizer, dropout=dropout, d_h=d_h, vectors=vectors, seed=seed,
                                cap=cap)
        glue.registry().start(name, cfg, probe)
    except glue.Busy as e:
        st.warning(str(e))
    except ValueError as e:
        st.error(f"Cannot start: {e}")


def job_view() -> None:
    """Progress of the current job and the probe's attention so far; re-run every second by the fragment
    while the job is active, so the curves and the attention timeline grow during the run."""
    job = glue.registry().current
    if job is None:
        return
    job.poll()
    st.subheader(f"Job {job.name}: {job.status}")
    p = job.progress
    if p:
        left = progress.remaining_seconds(p, job.config.epochs, job.history) if job.active else None
        eta = (f"; about {progress.duration(left)} left in the run (less if it stops early)" if left is not None
               else "; estimating the time left…" if job.active else "")
        st.progress(job.fraction(), text=progress.step_line(p, job.config.epochs) + eta)
    elif job.active:
        st.progress(0.0, text="loading data and word vectors…")
    if job.active and st.button("Stop", key="train-stop", help="ends after this step and keeps the best checkpoint"):
        job.stop()
    if glue.resumable(job) and st.button("Resume", key="train-resume",
                                         help="go on from the end of the last finished epoch"):
        try:
            glue.registry().resume(job)
        except glue.Busy as e:
            st.warning(str(e))
        else:
            st.rerun()
    if job.history:
        curves = figures.curves(job.history, progress.curve_keys(job.history))
        chart(st, figures.describe(curves, f"model {job.name}"), key="train-curves")
    timeline(job)
    if job.error:
        st.error(f"The job failed: {job.error}")
    if not job.active and st.session_state.get("train-seen") != (job.name, job.status):
        # a full rerun: the sidebar lists the new checkpoint, and this fragment stops refreshing
        st.session_state["train-seen"] = (job.name, job.status)
        st.rerun()


def timeline(job) -> None:
    """The probe sentence's attention after each epoch so far, with an epoch slider that follows the
    latest epoch until the user moves it."""
    snaps = job.timeline
    if not snaps:
        return
    st.subheader("Attention timeline")
    st.caption("The probe sentence's attention in both DiSA blocks (mean over features) after each epoch.")
    n, seen = len(snaps), st.session_state.get("train-timeline-n")
    if n != seen:
        if st.session_state.get("train-timeline") in (None, seen):  # on the latest epoch: follow it
            st.session_state["train-timeline"] = n
        st.session_state["train-timeline-n"] = n
    i = st.slider("Epoch", 1, n, key="train-timeline") - 1 if n > 1 else 0
    s = snaps[i]
    (a, b), (mask_a, mask_b), (name_a, name_b) = s.attention, s.masks, s.names
    fig = figures.attention_pair(a, b, s.tokens, mask_a, mask_b, titles=(name_a, name_b), scale="lift",
                                 title=f"epoch {s.epoch}: mean over features, lift over uniform")
    chart(st, figures.describe(fig, f"model {job.name} · “{job.probe}”"), key="train-timeline-fig")


def summary() -> None:
    job = glue.registry().current
    if job is None or job.active or job.metrics is None:
        return
    path = job.config.out
    ev = glue.evaluation(path, stamp(path))
    table = ev.table
    st.subheader("Evaluation on the test split")
    st.dataframe(progress.metrics_table(ev.metrics), hide_index=True)
    if ev.confusion is None:
        st.dataframe(glue.worst_first(table).head(50), hide_index=True)
        return
    c1, c2 = st.columns(2)
    about = f"model {job.name} · test split"
    chart(c1, figures.describe(figures.confusion_heatmap(ev.confusion, ev.labels), about), key="train-confusion")
    by_length = figures.accuracy_by_length(table["length"].to_numpy(), table["correct"].to_numpy())
    chart(c2, figures.describe(by_length, about), key="train-by-length")
    wrong = glue.misclassified(table)
    st.write(f"{len(wrong)} misclassified test examples")
    if len(wrong):
        row = st.selectbox("Open one in the Attention page", range(len(wrong)), key="train-wrong",
                           format_func=lambda r: f"[{wrong.gold[r]} → {wrong.predicted[r]}] {wrong.text[r][:90]}")
        st.dataframe(wrong[["text", "gold", "predicted", "length"]], hide_index=True, height=240)
        if st.button("Open in the Attention page", key="train-open"):
            glue.open_example(job.name, ev.kind, wrong.text[row])


st.header("Training")
st.caption("Batch 64, L2 on weight matrices, Glorot init, GloVe init with OOV ~ U(−0.05, 0.05), "
           "model selection on dev; one job at a time per server.")
if st.radio("Train on", SOURCES, horizontal=True, key="train-source") == SOURCES[0]:
    start_form(None)
else:
    own = own_data()
    if own is not None:
        start_form(own)
# A fragment only while the job runs: left in place after the run's last rerun, it sometimes cost the
# "Evaluation on the test split" heading drawn below it (seen in Chromium).
current = glue.registry().current
if current is not None and current.active:
    st.fragment(run_every=1.0)(job_view)()
else:
    job_view()
summary()
st.subheader("Runs")
runs = catalog.runs_table(entries())
if len(runs):
    st.dataframe(runs, hide_index=True)
