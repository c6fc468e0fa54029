"""A user's files are never lost: a command replaces only a folder orderlab wrote for it, one writer at a time,
writes only inside its root and replaces only a regular file the command does not read, removes only scratch it
made, and every output-path problem is one line and exit code 2."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from command_line import assert_refused, invoke
from hypothesis import given
from hypothesis import strategies as st
from stalling import snapshot, stall_env, start_stalled

from orderlab.errors import OrderlabError
from orderlab.results.ownership import LOCK_TOKEN
from orderlab.results.paths import child, make_scratch

ROOT = Path(__file__).resolve().parents[3]
SENTINEL = "a user's notes: must survive\n"


def spec_named(folder: Path, name: str, file_name: str = "spec.yaml") -> Path:
    path = folder / file_name
    # figures, but no map per attention head (a figure each)
    lines = [
        f"name: {json.dumps(name)}",
        "encodings: [none]",
        "inputs: [{sentence: dog bites man}]",
        "metrics: [equivariance]",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def user_folder(path: Path) -> Path:
    """A folder of the user's with a sentinel file in it."""
    path.mkdir(parents=True)
    (path / "notes.txt").write_text(SENTINEL)
    return path / "notes.txt"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A results root that already holds a user's file."""
    root = tmp_path / "out"
    root.mkdir()
    (root / "notes.txt").write_text(SENTINEL)
    return root


# --- names: one plain folder under --out ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (".", "name: got '.'; expected a name not starting with '.'"),
        ("..", "name: got '..'; expected a name not starting with '.'"),
        (".hidden", "name: got '.hidden'; expected a name not starting with '.'"),
        ("../elsewhere", "name: got '../elsewhere'; expected letters, digits, '_', '-' and '.' only"),
        ("x" * 101, f"name: got '{'x' * 101}'; 101 characters; expected at most 100"),
    ],
    ids=["dot", "dot-dot", "hidden", "separator", "too-long"],
)
def test_a_name_that_is_not_one_plain_folder_is_a_spec_error_and_nothing_is_touched(
    tmp_path: Path, out: Path, name: str, message: str
):
    before = snapshot(tmp_path)
    spec = spec_named(tmp_path, name)
    result = invoke("run", spec, "--out", out, "-q")
    assert_refused(result, f"{spec}:1: {message}")
    assert snapshot(tmp_path) == {**before, "spec.yaml": spec.read_bytes()}
    assert_refused(invoke("validate", spec), message)


def test_a_file_stem_that_cannot_name_a_folder_is_refused_unless_the_spec_names_one(tmp_path: Path, out: Path):
    spec = tmp_path / "my spec.yaml"
    spec.write_text("encodings: [none]\ninputs: [{sentence: dog bites man}]\n")
    assert_refused(invoke("run", spec, "--out", out, "-q"), "file name 'my spec' cannot name the results folder")
    spec.write_text("name: mine\n" + spec.read_text())
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0


# --- ownership: only a folder orderlab wrote for the same command and spec is replaced --------------


def test_a_users_folder_with_the_specs_name_is_never_replaced_not_even_with_force(tmp_path: Path, out: Path):
    sentinel = user_folder(out / "mine")
    spec = spec_named(tmp_path, "mine")
    for force in ([], ["--force"]):
        result = invoke("run", spec, "--out", out, "-q", *force)
        assert_refused(result, f"{out / 'mine'} was not written by orderlab", "notes.txt", "nothing was written")
        assert sentinel.read_text() == SENTINEL and sorted(p.name for p in (out / "mine").iterdir()) == ["notes.txt"]


def test_a_users_file_inside_a_results_folder_blocks_the_rerun_not_even_force_deletes_it(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    (out / "mine" / "notes.txt").write_text(SENTINEL)
    for force in ([], ["--force"]):
        result = invoke("run", spec, "--out", out, "-q", *force)
        assert_refused(result, f"{out / 'mine'} holds notes.txt, which orderlab did not write")
        assert (out / "mine" / "notes.txt").read_text() == SENTINEL


def test_a_spec_named_properties_does_not_replace_what_orderlab_properties_wrote_unless_forced(
    tmp_path: Path, out: Path
):
    assert invoke("properties", "-e", "none", "--max-len", "4", "--out", out, "-q").exit_code == 0
    written = snapshot(out / "properties")
    spec = spec_named(tmp_path, "properties")
    result = invoke("run", spec, "--out", out, "-q")
    assert_refused(result, "holds the results of `orderlab properties`, not of `orderlab run` of spec 'properties'",
                   "`orderlab run --force`")  # fmt: skip
    assert snapshot(out / "properties") == written
    assert invoke("run", spec, "--out", out, "-q", "--force").exit_code == 0
    manifest = json.loads((out / "properties" / "manifest.json").read_text())
    assert manifest["written_by"] == {"command": "run", "spec": "properties"}
    assert (out / "notes.txt").read_text() == SENTINEL


def test_force_replaces_the_results_of_another_spec(tmp_path: Path, out: Path):
    assert invoke("run", spec_named(tmp_path, "first", "first.yaml"), "--out", out, "-q").exit_code == 0
    (out / "first").rename(out / "second")
    second = spec_named(tmp_path, "second", "second.yaml")
    assert_refused(invoke("run", second, "--out", out, "-q"), "the results of `orderlab run` of spec 'first'")
    assert invoke("run", second, "--out", out, "-q", "--force").exit_code == 0
    assert json.loads((out / "second" / "manifest.json").read_text())["spec"]["name"] == "second"


def test_a_spec_of_the_same_name_in_another_file_is_refused_unless_forced(tmp_path: Path, out: Path):
    first = spec_named(tmp_path, "dog_bites_man", "a.yaml")
    assert invoke("run", first, "--out", out, "-q").exit_code == 0
    written = snapshot(out / "dog_bites_man")
    other = spec_named(tmp_path, "dog_bites_man", "b.yaml")
    assert_refused(invoke("run", other, "--out", out, "-q"), f"holds the results of {first}, another spec file",
                   f"give {other} another name:", "--force")  # fmt: skip
    assert snapshot(out / "dog_bites_man") == written
    assert invoke("run", first, "--out", out, "-q").exit_code == 0  # the same file replaces its own results
    assert invoke("run", other, "--out", out, "-q", "--force").exit_code == 0
    assert json.loads((out / "dog_bites_man" / "manifest.json").read_text())["spec"]["path"] == str(other)


def test_a_committed_baseline_is_replaced_by_run_and_by_check_update(tmp_path: Path):
    out = tmp_path / "results"
    shutil.copytree(ROOT / "results" / "worked_example", out / "worked_example")
    manifest_path = out / "worked_example" / "manifest.json"
    legacy = json.loads(manifest_path.read_text())
    for key in ("written_by", "files"):  # as baselines were committed before manifests named their writer
        del legacy[key]
    manifest_path.write_text(json.dumps(legacy))
    (out / "worked_example" / "orders.csv").unlink()  # which came later still
    spec = ROOT / "experiments" / "worked_example.yaml"
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    manifest = json.loads((out / "worked_example" / "manifest.json").read_text())
    assert manifest["written_by"] == {"command": "run", "spec": "worked_example"}
    assert manifest["files"] == sorted(p.name for p in (out / "worked_example").iterdir())
    assert invoke("check", "--update", spec, "--results", out).exit_code == 0


def write_user_folder_for(command: str, tmp_path: Path, out: Path) -> tuple[list[str], Path]:
    """The arguments of `command` and the user's sentinel in the folder it would write."""
    spec = spec_named(tmp_path, "mine")
    if command == "run":
        return ["run", str(spec), "--out", str(out), "-q"], user_folder(out / "mine")
    if command == "check --update":
        return ["check", "--update", str(spec), "--results", str(out)], user_folder(out / "mine")
    if command == "compare":
        return ["compare", str(spec), "-e", "none", "--out", str(out), "-q"], user_folder(out / "compare")
    if command == "properties":
        return ["properties", "-e", "none", "--max-len", "4", "--out", str(out), "-q"], user_folder(out / "properties")
    if command == "trace":
        return ["trace", str(spec), "--out", str(out)], user_folder(out / "mine_trace")
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    return ["plot", str(out / "mine")], user_folder(out / "mine" / "figures")


@pytest.mark.parametrize("command", ["run", "check --update", "compare", "properties", "trace", "plot"])
def test_every_command_that_writes_a_folder_leaves_a_users_folder_alone(tmp_path: Path, out: Path, command: str):
    args, sentinel = write_user_folder_for(command, tmp_path, out)
    before = snapshot(out)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "notes.txt" in result.output and "nothing was written" in result.output, result.output
    assert snapshot(out) == before and sentinel.read_text() == SENTINEL


@pytest.mark.parametrize("command", ["trace", "plot"])
def test_a_folder_without_a_manifest_is_a_users_even_where_its_files_have_orderlabs_names(
    tmp_path: Path, out: Path, command: str
):
    """No manifest, no proof of authorship: a figures/ or NAME_trace/ folder holding files named as orderlab names
    its own (a PNG plot would draw, a CSV trace would write) is left whole and reported, never overwritten."""
    spec = spec_named(tmp_path, "mine")
    if command == "trace":
        args, folder, name = ["trace", spec, "--out", out], out / "mine_trace", "input0-layer1-none.csv"
    else:
        assert invoke("run", spec, "--out", out, "-q").exit_code == 0
        args, folder, name = ["plot", out / "mine"], out / "mine" / "figures", "metrics_by_layer.png"
    folder.mkdir()
    (folder / name).write_text(SENTINEL)
    before = snapshot(out)
    assert_refused(invoke(*args), f"{folder} was not written by orderlab", name, "nothing was written")
    assert snapshot(out) == before and (folder / name).read_text() == SENTINEL


@pytest.mark.slow
def test_trace_keeps_its_earlier_traces_and_plot_redraws_its_own_figures(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    assert invoke("trace", spec, "--out", out).exit_code == 0
    assert invoke("trace", spec, "--out", out, "--input", "0", "--layer", "2").exit_code == 0
    traces = sorted(p.name for p in (out / "mine_trace").iterdir())
    assert traces == ["input0-layer1-none.csv", "input0-layer2-none.csv", "manifest.json"]
    assert invoke("run", spec, "--out", out, "-q", "--plot").exit_code == 0
    assert invoke("plot", out / "mine").exit_code == 0
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0  # the figures are orderlab's: replaced
    assert not (out / "mine" / "figures").exists()


# --- output paths: one line, exit 2 -----------------------------------------------------------------


def test_out_pointing_at_a_file_is_one_line(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    result = invoke("run", spec, "--out", out / "notes.txt", "-q")
    assert_refused(result, f"{out / 'notes.txt'} is a file, not a folder")
    assert (out / "notes.txt").read_text() == SENTINEL


def test_a_file_where_the_results_folder_would_go_is_one_line(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "notes.txt")
    result = invoke("run", spec, "--out", out, "-q")
    assert_refused(result, f"{out / 'notes.txt'} exists and is not a folder")
    assert (out / "notes.txt").read_text() == SENTINEL


def creatable(folder: Path) -> bool:
    try:
        (folder / "probe").mkdir()
    except OSError:
        return False
    (folder / "probe").rmdir()
    return True


@pytest.fixture
def unwritable(tmp_path: Path):
    """A folder nobody may create entries in. Tests run as root, whom chmod does not stop: then sysfs."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if creatable(folder):
            folder = Path("/sys")
            if not folder.is_dir() or creatable(folder):
                pytest.skip("no folder here refuses new entries")
        yield folder
    finally:
        (tmp_path / "read-only").chmod(0o755)


def test_an_unwritable_out_is_one_line(tmp_path: Path, unwritable: Path):
    spec = spec_named(tmp_path, "mine")
    for out in (unwritable, unwritable / "deeper"):
        assert_refused(invoke("run", spec, "--out", out, "-q"), f"cannot write {out / 'mine'}: ")


def test_an_over_long_out_is_one_line(tmp_path: Path):
    spec = spec_named(tmp_path, "mine")
    out = tmp_path / ("x" * 300)
    assert_refused(invoke("run", spec, "--out", out, "-q"), f"cannot write {out / 'mine'}: File name too long")


# --- one writer at a time ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_writer_is_turned_away_and_the_first_writes_its_folder_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    out = tmp_path / "results"
    first = start_stalled(tmp_path, ["run", "stalled.yaml", "--out", str(out), "-q"])
    try:
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        for name, value in stall_env(tmp_path).items():
            monkeypatch.setenv(name, value)
        second = invoke("run", "stalled.yaml", "--out", out, "-q")
        assert_refused(second, f"{out / 'stalled'} is being written by another orderlab command")
        (tmp_path / "release").touch()
        _, stderr = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == ["stalled"]  # no staging folder, no lock file left
    manifest = json.loads((out / "stalled" / "manifest.json").read_text())
    assert manifest["files"] == ["attention.csv", "manifest.json", "metrics.csv", "orders.csv", "summary.csv"]
    assert sorted(p.name for p in (out / "stalled").iterdir()) == manifest["files"]
    assert (out / "stalled" / "metrics.csv").read_text().count("\n") == manifest["rows"] + 1


def test_the_lock_is_released_so_the_next_run_goes_ahead(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["mine", "notes.txt"]


def test_staging_leftovers_are_ignored_by_git():
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    leftovers = ["results/.dog.k2j4_x9a.tmp/new/metrics.csv", "results/.dog.lock"]
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", *leftovers], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.stdout.split() == leftovers


# --- the writer rule: folders stay inside their root -----------------------------------------------


@given(st.text(max_size=40))
def test_a_folder_name_either_stays_one_plain_folder_inside_its_root_or_is_refused(name: str):
    root = Path("/results/root")
    try:
        folder = child(root, name)
    except OrderlabError as error:
        assert str(error).startswith("cannot write a folder named") and "\n" not in str(error)
        return
    assert folder.parent == root and folder.name == name and not name.startswith(".")
    assert Path(os.path.normpath(folder)).parent == root


def shards_of(tmp_path: Path, name: str) -> list[Path]:
    """The two shard folders of a run of spec `name`, under tmp_path/shards."""
    spec = spec_named(tmp_path, name)
    shards = tmp_path / "shards"
    for index in (1, 2):
        assert invoke("run", spec, "--out", shards, "--shard", f"{index}/2", "-q").exit_code == 0
    return sorted(shards.iterdir())


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/escaped-by-merge", ".hidden"])
def test_merge_never_writes_outside_out_whatever_name_the_shards_manifests_hold(tmp_path: Path, out: Path, name: str):
    shards = shards_of(tmp_path, "mine")
    for shard in shards:
        manifest = json.loads((shard / "manifest.json").read_text())
        manifest["spec"]["name"] = name
        (shard / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(tmp_path)
    result = invoke("merge", *shards, "--out", out, "-q")
    assert result.exit_code == 2 and result.output.startswith("error: ") and result.output.count("\n") == 1
    assert snapshot(tmp_path) == before
    assert not (tmp_path.parent / "escaped").exists() and not Path("/tmp/escaped-by-merge").exists()


def test_a_symbolic_link_where_the_results_folder_would_go_is_refused_and_left(tmp_path: Path, out: Path):
    sentinel = user_folder(tmp_path / "elsewhere")
    (out / "mine").symlink_to(tmp_path / "elsewhere")
    result = invoke("run", spec_named(tmp_path, "mine"), "--out", out, "-q")
    assert_refused(result, f"{out / 'mine'} is a symbolic link", "nothing was written")
    assert (out / "mine").is_symlink() and sentinel.read_text() == SENTINEL
    assert sorted(p.name for p in sentinel.parent.iterdir()) == ["notes.txt"]


# --- scratch: orderlab removes only what it made ---------------------------------------------------


def users_scratch_shapes(out: Path, name: str) -> list[Path]:
    """A user's folders named as orderlab's scratch used to be named, with sentinels in them."""
    return [user_folder(out / f".{name}.old"), user_folder(out / f".{name}.k2j4_x9a.tmp")]


@pytest.mark.parametrize("command", ["run", "merge"])
def test_a_users_old_and_tmp_folders_beside_the_results_folder_are_left_as_they_were(
    tmp_path: Path, out: Path, command: str
):
    spec = spec_named(tmp_path, "mine")
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0  # a previous folder, retired by the next write
    sentinels = users_scratch_shapes(out, "mine")
    args = ["run", spec] if command == "run" else ["merge", *shards_of(tmp_path, "mine")]
    result = invoke(*args, "--out", out, "-q", "--force")
    assert result.exit_code == 0, result.output
    assert all(sentinel.read_text() == SENTINEL for sentinel in sentinels)
    assert sorted(p.name for p in out.iterdir()) == [".mine.k2j4_x9a.tmp", ".mine.old", "mine", "notes.txt"]


def plant(kind: str, path: Path, tmp_path: Path) -> None:
    """Put a user's `kind` of thing at `path`: a file, FIFO, folder or symbolic link holding the sentinel."""
    if kind == "file":
        path.write_text(SENTINEL)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        user_folder(path)
    else:
        (tmp_path / "target.txt").write_text(SENTINEL)
        path.symlink_to(tmp_path / "target.txt")


@pytest.mark.parametrize("kind", ["file", "fifo", "folder", "link"])
def test_a_users_lock_named_file_is_refused_and_left_whatever_it_is(tmp_path: Path, out: Path, kind: str):
    lock, spec = out / ".mine.lock", spec_named(tmp_path, "mine")
    plant(kind, lock, tmp_path)
    before = snapshot(tmp_path)
    result = invoke("run", spec, "--out", out, "-q")
    assert_refused(result, f"{lock} is not orderlab's lock file (orderlab did not make it); nothing was written")
    assert snapshot(tmp_path) == before and os.path.lexists(lock)
    assert stat.S_ISFIFO(os.lstat(lock).st_mode) == (kind == "fifo")


def test_merge_leaves_a_users_lock_named_file(tmp_path: Path, out: Path):
    shards = shards_of(tmp_path, "mine")
    (out / ".mine.lock").write_text(SENTINEL)
    assert_refused(invoke("merge", *shards, "--out", out, "-q"), f"{out / '.mine.lock'} is not orderlab's lock")
    assert (out / ".mine.lock").read_text() == SENTINEL and not (out / "mine").exists()


def test_a_lock_left_by_a_killed_orderlab_carries_its_token_and_is_taken_over(tmp_path: Path, out: Path):
    (out / ".mine.lock").write_bytes(LOCK_TOKEN)
    assert invoke("run", spec_named(tmp_path, "mine"), "--out", out, "-q").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["mine", "notes.txt"]


@pytest.mark.slow
def test_plot_leaves_a_users_figures_old_and_the_next_run_reports_it(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    assert invoke("run", spec, "--out", out, "-q", "--plot").exit_code == 0
    sentinel = user_folder(out / "mine" / ".figures.old")
    result = invoke("plot", out / "mine")
    assert result.exit_code == 0, result.output
    assert sentinel.read_text() == SENTINEL
    before = snapshot(out)
    assert_refused(invoke("run", spec, "--out", out, "-q"), "holds .figures.old, which orderlab did not write")
    assert snapshot(out) == before


@pytest.mark.slow
def test_plot_refuses_a_users_figures_lock_and_leaves_it(tmp_path: Path, out: Path):
    assert invoke("run", spec_named(tmp_path, "mine"), "--out", out, "-q", "--plot").exit_code == 0
    (out / "mine" / ".figures.lock").write_text(SENTINEL)
    before = snapshot(out)
    assert_refused(invoke("plot", out / "mine"), f"{out / 'mine' / '.figures.lock'} is not orderlab's lock")
    assert snapshot(out) == before


@pytest.mark.slow
def test_scratch_that_carries_orderlabs_token_is_orderlabs_to_replace(tmp_path: Path, out: Path):
    spec = spec_named(tmp_path, "mine")
    assert invoke("run", spec, "--out", out, "-q", "--plot").exit_code == 0
    make_scratch(out / "mine" / "figures")  # as a plot killed mid-write leaves it
    (out / "mine" / ".figures.lock").write_bytes(LOCK_TOKEN)
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    assert sorted(p.name for p in (out / "mine").iterdir()) == [
        "manifest.json", "metrics.csv", "orders.csv", "summary.csv"
    ]  # fmt: skip


# --- report files: only a regular file the command does not read is replaced ----------------------


@pytest.fixture
def device(tmp_path: Path) -> Path:
    """A character device like /dev/null, made in tmp_path, so that a bug would replace nothing of the system's."""
    path = tmp_path / "device"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except OSError:
        pytest.skip("device nodes can be made by root only")
    return path


def report_args(option: str, tmp_path: Path, out: Path, target: Path) -> list[str | Path]:
    spec = spec_named(tmp_path, "mine")
    if option == "check --junit":
        return ["check", spec, "--results", out, "--junit", target]
    if option == "check --html":
        return ["check", spec, "--results", out, "--html", target]
    if option == "compare --html":
        return ["compare", spec, "-e", "none", "--out", out, "-q", "--html", target]
    assert invoke("run", spec, "--out", out, "-q").exit_code == 0
    return ["report", out / "mine", "--out", target]


OPTIONS = ["check --junit", "check --html", "compare --html", "report --out"]


@pytest.mark.parametrize("option", OPTIONS)
def test_a_device_named_as_a_report_is_refused_and_never_opened(tmp_path: Path, out: Path, device: Path, option: str):
    args = report_args(option, tmp_path, out, device)
    before = snapshot(out)
    result = invoke(*args)
    assert_refused(result, f"{device}: is a character device; orderlab replaces only a regular file; nothing was")
    assert stat.S_ISCHR(os.lstat(device).st_mode) and snapshot(out) == before


@pytest.mark.parametrize("option", OPTIONS)
def test_a_fifo_named_as_a_report_is_refused_without_waiting_on_it(tmp_path: Path, out: Path, option: str):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = invoke(*report_args(option, tmp_path, out, fifo))
    assert_refused(result, f"{fifo}: is a FIFO (named pipe); orderlab replaces only a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("option", OPTIONS)
def test_a_symbolic_link_named_as_a_report_is_refused_and_its_target_left(tmp_path: Path, out: Path, option: str):
    (tmp_path / "target.txt").write_text(SENTINEL)
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "target.txt")
    assert_refused(invoke(*report_args(option, tmp_path, out, link)), f"{link}: is a symbolic link")
    assert link.is_symlink() and (tmp_path / "target.txt").read_text() == SENTINEL


def test_dev_null_as_junit_is_refused_before_anything_is_opened_or_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """As root, a bug here would replace the system's /dev/null: every write beside or over it fails the test."""
    rename, make_temporary = os.replace, __import__("tempfile").mkstemp

    def guarded_replace(source, destination):
        assert not str(destination).startswith("/dev/"), "orderlab tried to replace a file in /dev"
        return rename(source, destination)

    def guarded_mkstemp(*args, **kwargs):
        assert str(kwargs.get("dir", "")) != "/dev", "orderlab tried to write a file in /dev"
        return make_temporary(*args, **kwargs)

    monkeypatch.setattr(os, "replace", guarded_replace)
    monkeypatch.setattr("tempfile.mkstemp", guarded_mkstemp)
    spec = spec_named(tmp_path, "mine")
    result = invoke("check", spec, "--results", tmp_path / "results", "--junit", "/dev/null")
    assert_refused(result, "--junit /dev/null: is a character device; orderlab replaces only a regular file")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
