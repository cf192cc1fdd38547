# Reads a grid file for run_lanes.sh, run_grid.sh and device_train.sh (sourced, not run): one run per line,
#   NAME CONFIG [KEY=VALUE ...]     (# starts a comment; blank lines are skipped)
# A line `@RECIPE KEY=VALUE ...` names a set of overrides that the run lines below it may cite as
# `@RECIPE`, which stands for those overrides in that place (so a recipe shared by many runs is
# written once); a recipe may cite recipes defined above it, expanded where it is defined. A line
# `@include FILE` (FILE relative to the grid's folder) defines the recipes of FILE there, a file of
# recipe lines and comments only (no further includes), so that recipes shared by several grids
# are written once too. A recipe defined twice is an error.
# read_grid FILE fills grid_order (the names, in order), grid_config[NAME] and grid_sets[NAME]
# (the overrides, recipes expanded, space-separated); a malformed line, a recipe not defined
# above or defined twice, or a missing include is an error naming FILE:LINE (status 2). With a
# second argument (an included file), FILE may hold recipe lines only.
declare -A grid_config=() grid_sets=() grid_recipes=() grid_recipe_at=()
grid_order=()

# _grid_expand FILE LINE WORD...: the words with each @RECIPE replaced by its overrides, in the
# caller's `sets` (status 2, naming FILE:LINE, for a recipe not defined above).
_grid_expand() {
  local file=$1 line=$2 kv recipe
  shift 2
  sets=()
  for kv in "$@"; do
    if [[ $kv == @* ]]; then
      if [[ ! -v grid_recipes[$kv] ]]; then
        echo "$file:$line: recipe '$kv' is not defined above (a line '$kv KEY=VALUE ...')" >&2
        return 2
      fi
      read -r -a recipe <<< "${grid_recipes[$kv]}"
      sets+=("${recipe[@]}")
    else
      sets+=("$kv")
    fi
  done
}

read_grid() {
  local file=$1 recipes_only=${2:-} line=0 text fields sets included
  [ -n "$recipes_only" ] || grid_recipes=() grid_recipe_at=()  # each grid starts with its own recipes
  while IFS= read -r text || [ -n "$text" ]; do
    line=$((line + 1))
    text=${text%%#*}
    read -r -a fields <<< "$text"  # split on blanks, no glob expansion
    [ ${#fields[@]} -eq 0 ] && continue
    if [[ ${fields[0]} == @include ]]; then
      if [ -n "$recipes_only" ]; then
        echo "$file:$line: an included recipes file cannot include another" >&2
        return 2
      fi
      included=$(dirname "$file")/${fields[1]:-}
      if [ ${#fields[@]} -ne 2 ] || [ ! -f "$included" ]; then
        echo "$file:$line: expected '@include FILE' naming a file (relative to the grid's folder), got '$text'" >&2
        return 2
      fi
      read_grid "$included" recipes || { echo "$file:$line: in the file it includes" >&2; return 2; }
      continue
    fi
    if [[ ${fields[0]} == @* ]]; then
      if [[ -v grid_recipe_at[${fields[0]}] ]]; then
        echo "$file:$line: recipe '${fields[0]}' is already defined at ${grid_recipe_at[${fields[0]}]}" >&2
        return 2
      fi
      _grid_expand "$file" "$line" "${fields[@]:1}" || return 2
      grid_recipes[${fields[0]}]="${sets[*]}"
      grid_recipe_at[${fields[0]}]=$file:$line
      continue
    fi
    if [ -n "$recipes_only" ]; then
      echo "$file:$line: a recipes file holds only '@RECIPE KEY=VALUE ...' lines, got '$text'" >&2
      return 2
    fi
    if [ ${#fields[@]} -lt 2 ]; then
      echo "$file:$line: expected 'NAME CONFIG [KEY=VALUE ...]', got '$text'" >&2
      return 2
    fi
    _grid_expand "$file" "$line" "${fields[@]:2}" || return 2
    grid_config[${fields[0]}]=${fields[1]}
    grid_sets[${fields[0]}]="${sets[*]}"
    grid_order+=("${fields[0]}")
  done < "$file"
}

# grid_set_args NAME: the run's overrides as `ut train` arguments, in grid_args
# (--set KEY=VALUE ...; split on blanks without glob expansion: values like [1,2] stay as they are).
grid_set_args() {
  local kv values
  grid_args=()
  read -r -a values <<< "${grid_sets[$1]:-}"
  for kv in "${values[@]}"; do grid_args+=(--set "$kv"); done
}

# select_runs CONFIGS: where CONFIGS is a grid file (NAME.grid), reads it and checks that every
# name in the caller's `names` array is one of its runs (status 2 naming the first that is not);
# an empty `names` becomes all of its runs, in order. A config folder leaves `names` as it is.
select_runs() {
  local configs=$1 name
  [[ -f $configs && $configs == *.grid ]] || return 0
  read_grid "$configs" || return 2
  [ ${#names[@]} -eq 0 ] && names=("${grid_order[@]}")
  for name in "${names[@]}"; do
    [ -n "${grid_config[$name]:-}" ] || { echo "$configs has no run named '$name'" >&2; return 2; }
  done
}

# run_config CONFIGS NAME: the config file of run NAME, in run_config_path: its grid line's, or
# CONFIGS/NAME.yaml for a config folder.
run_config() {
  run_config_path=${grid_config[$2]:-$1/$2.yaml}
}

# require_ut: the `ut` executable to run, in ut (UT, else `ut` on PATH); status 2 with a clear
# error if there is none, so that a queue stops at once instead of failing every run in turn.
require_ut() {
  ut=${UT:-ut}
  command -v "$ut" > /dev/null || { echo "$ut: not found (activate the environment that installed ut, or set UT to its path)" >&2; return 2; }
}
