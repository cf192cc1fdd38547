"""``scripts/grid.sh``'s grid reader: run lines, recipes, shared recipe files and their errors."""

from __future__ import annotations

from pathlib import Path

from tests.scripts.grid_reader import grid_runs, read_grid


def _grid(folder: Path, text: str, **recipe_files: str) -> Path:
    """Writes g.grid holding TEXT and each NAME.recipes of RECIPE_FILES beside it."""
    for name, recipes in recipe_files.items():
        (folder / f"{name}.recipes").write_text(recipes)
    grid = folder / "g.grid"
    grid.write_text(text)
    return grid


def _error(grid: Path) -> str:
    """The reader's error message, which must come with status 2."""
    result = read_grid(grid)
    assert result.returncode == 2, result
    return result.stderr


def test_recipes_expand_in_place_and_an_included_file_defines_them(tmp_path):
    grid = _grid(tmp_path, "# runs\n@include shared.recipes\n@small  model.d_model=8\n"
                 "a  configs/a.yaml  @small task.tasks=1 @opt  # a comment\n"
                 "b  configs/b.yaml\n", shared="# shared\n@opt  train.lr=0.5 train.betas=[0.9,0.99]\n")
    assert grid_runs(grid) == [
        ("a", "configs/a.yaml", ["model.d_model=8", "task.tasks=1", "train.lr=0.5", "train.betas=[0.9,0.99]"]),
        ("b", "configs/b.yaml", []),
    ]


def test_a_recipe_used_before_its_include_is_an_error_naming_the_line(tmp_path):
    grid = _grid(tmp_path, "a  configs/a.yaml  @opt\n@include shared.recipes\n", shared="@opt  train.lr=0.5\n")
    assert f"{grid}:1: recipe '@opt' is not defined above" in _error(grid)


def test_a_recipe_defined_twice_is_an_error_naming_both_places(tmp_path):
    grid = _grid(tmp_path, "@include shared.recipes\n@opt  train.lr=0.1\na  configs/a.yaml  @opt\n",
                 shared="\n@opt  train.lr=0.5\n")
    assert f"{grid}:2: recipe '@opt' is already defined at {tmp_path / 'shared.recipes'}:2" in _error(grid)


def test_a_run_line_in_a_recipes_file_is_an_error(tmp_path):
    grid = _grid(tmp_path, "@include shared.recipes\nb  configs/b.yaml  @opt\n",
                 shared="@opt  train.lr=0.5\na  configs/a.yaml\n")
    assert f"{tmp_path / 'shared.recipes'}:2: a recipes file holds only" in _error(grid)


def test_includes_do_not_nest(tmp_path):
    grid = _grid(tmp_path, "@include shared.recipes\na  configs/a.yaml\n",
                 shared="@include other.recipes\n", other="@opt  train.lr=0.5\n")
    assert f"{tmp_path / 'shared.recipes'}:1: an included recipes file cannot include another" in _error(grid)


def test_a_missing_include_is_an_error_naming_the_line(tmp_path):
    grid = _grid(tmp_path, "# runs\n@include no-such.recipes\na  configs/a.yaml\n")
    assert f"{grid}:2: expected '@include FILE'" in _error(grid)


def test_a_run_line_without_its_config_is_an_error(tmp_path):
    grid = _grid(tmp_path, "a  configs/a.yaml\nb\n")
    assert f"{grid}:2: expected 'NAME CONFIG" in _error(grid)


def test_a_file_included_twice_names_the_second_include(tmp_path):
    grid = _grid(tmp_path, "@include shared.recipes\n@include shared.recipes\na  configs/a.yaml\n",
                 shared="@opt  train.lr=0.5\n")
    assert f"{grid}:2: in the file it includes" in _error(grid)


def test_an_include_is_found_beside_the_grid_from_any_folder_and_last_lines_need_no_newline(tmp_path):
    (tmp_path / "sub").mkdir()
    _grid(tmp_path / "sub", "@include shared.recipes\na  configs/a.yaml  @opt", shared="@opt  train.lr=0.5")
    result = read_grid(Path("sub/g.grid"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "a\tconfigs/a.yaml\ttrain.lr=0.5\n"
