"""``scripts/grid.sh``'s grid reader: run lines, recipes, shared recipe files and their errors."""

from __future__ import annotations

from pathlib import Path

from tests.scripts.grid_reader import grid_runs, read_grid


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_recipes_expand_in_place_and_an_included_file_defines_them(tmp_path):
    _write(tmp_path, "shared.recipes", "# shared\n@opt  train.lr=0.5 train.betas=[0.9,0.99]\n")
    grid = _write(tmp_path, "g.grid", "# runs\n@include shared.recipes\n@small  model.d_model=8\n"
                  "a  configs/a.yaml  @small task.tasks=1 @opt  # a comment\n"
                  "b  configs/b.yaml\n")
    assert grid_runs(grid) == [
        ("a", "configs/a.yaml", ["model.d_model=8", "task.tasks=1", "train.lr=0.5", "train.betas=[0.9,0.99]"]),
        ("b", "configs/b.yaml", []),
    ]


def test_a_recipe_used_before_its_include_is_an_error_naming_the_line(tmp_path):
    _write(tmp_path, "shared.recipes", "@opt  train.lr=0.5\n")
    grid = _write(tmp_path, "g.grid", "a  configs/a.yaml  @opt\n@include shared.recipes\n")
    result = read_grid(grid)
    assert result.returncode == 2 and f"{grid}:1: recipe '@opt' is not defined above" in result.stderr


def test_a_recipe_defined_twice_is_an_error_naming_both_places(tmp_path):
    recipes = _write(tmp_path, "shared.recipes", "\n@opt  train.lr=0.5\n")
    grid = _write(tmp_path, "g.grid", "@include shared.recipes\n@opt  train.lr=0.1\na  configs/a.yaml  @opt\n")
    result = read_grid(grid)
    assert result.returncode == 2
    assert f"{grid}:2: recipe '@opt' is already defined at {recipes}:2" in result.stderr


def test_a_run_line_in_a_recipes_file_is_an_error(tmp_path):
    recipes = _write(tmp_path, "shared.recipes", "@opt  train.lr=0.5\na  configs/a.yaml\n")
    grid = _write(tmp_path, "g.grid", "@include shared.recipes\nb  configs/b.yaml  @opt\n")
    result = read_grid(grid)
    assert result.returncode == 2 and f"{recipes}:2: a recipes file holds only" in result.stderr


def test_includes_do_not_nest(tmp_path):
    recipes = _write(tmp_path, "shared.recipes", "@include other.recipes\n")
    _write(tmp_path, "other.recipes", "@opt  train.lr=0.5\n")
    grid = _write(tmp_path, "g.grid", "@include shared.recipes\na  configs/a.yaml\n")
    result = read_grid(grid)
    assert result.returncode == 2 and f"{recipes}:1: an included recipes file cannot include another" in result.stderr


def test_a_missing_include_is_an_error_naming_the_line(tmp_path):
    grid = _write(tmp_path, "g.grid", "# runs\n@include no-such.recipes\na  configs/a.yaml\n")
    result = read_grid(grid)
    assert result.returncode == 2 and f"{grid}:2: expected '@include FILE'" in result.stderr


def test_a_run_line_without_its_config_is_an_error(tmp_path):
    grid = _write(tmp_path, "g.grid", "a  configs/a.yaml\nb\n")
    result = read_grid(grid)
    assert result.returncode == 2 and f"{grid}:2: expected 'NAME CONFIG" in result.stderr
