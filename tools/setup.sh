#!/usr/bin/env bash
# Set up everything scconsensus, its tests and vignettes need on a fresh Debian machine:
# R with Bioconductor's ConsensusClusterPlus, ALL, SingleCellExperiment, bluster and scran (apt), then the
# Python package with all extras (pip, editable). Idempotent: skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

R_PACKAGES=(
  r-base-core r-base-dev
  r-bioc-consensusclusterplus r-bioc-all r-bioc-singlecellexperiment
  r-bioc-bluster r-bioc-scran
  r-cran-reticulate r-cran-testthat r-cran-roxygen2 r-cran-knitr r-cran-rmarkdown
)

missing=()
for pkg in "${R_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup: need root and apt-get to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing R packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
fi

PYTHON=${PYTHON:-python3}
echo "setup: installing scconsensus[all] with $($PYTHON --version)"
$PYTHON -m pip install -q --disable-pip-version-check -e ".[all]"
$PYTHON -c "import scconsensus, rpy2.robjects; print('setup: ok, scconsensus', scconsensus.__version__)"
# numba compiles each kernel on its first call (10-40 s a route): once here, not in the
# first analysis
$PYTHON -m scconsensus warmup
# the line R users need: reticulate must use this Python, not the first one it finds
$PYTHON -c "import sys; print(f'setup: in R, Sys.setenv(RETICULATE_PYTHON = \"{sys.executable}\")')"
