# The R code in the READMEs runs as written (issue 14: they must not drift).
# The repository root is found from SCCONSENSUS_ROOT (set by
# tests/test_r_bridge.py) or from this directory in a clone; R CMD check, which
# copies the tests away from the clone, skips these.

repo_root <- function() {
    for (root in c(Sys.getenv("SCCONSENSUS_ROOT"), "../../..")) {
        if (nzchar(root) && file.exists(file.path(root, "r_bridge", "DESCRIPTION")) &&
            file.exists(file.path(root, "README.md"))) {
            return(normalizePath(root))
        }
    }
    skip("not in a clone of the scconsensus repository")
}

# The ```r blocks of a markdown file, optionally only in the section `section`.
r_blocks <- function(path, section = NULL) {
    lines <- readLines(path, warn = FALSE)
    if (!is.null(section)) {
        start <- grep(paste0("^## ", section, "\\s*$"), lines)
        expect_length(start, 1L)
        ends <- grep("^## ", lines)
        end <- min(c(ends[ends > start], length(lines) + 1L)) - 1L
        lines <- lines[start:end]
    }
    opens <- grep("^```r\\s*$", lines)
    closes <- grep("^```\\s*$", lines)
    lapply(opens, function(o) lines[(o + 1L):(min(closes[closes > o]) - 1L)])
}

run_blocks <- function(blocks, env) {
    grDevices::pdf(NULL)  # the READMEs plot; no Rplots.pdf in the tests folder
    on.exit(grDevices::dev.off(), add = TRUE)
    old <- Sys.getenv("RETICULATE_PYTHON", unset = NA)
    on.exit(if (is.na(old)) Sys.unsetenv("RETICULATE_PYTHON") else
        Sys.setenv(RETICULATE_PYTHON = old), add = TRUE)
    for (block in blocks) {
        # print as at the console: every top-level value that would show
        for (expr in parse(text = block, keep.source = FALSE)) {
            out <- withVisible(eval(expr, env))
            if (out$visible) utils::capture.output(print(out$value))
        }
    }
    env
}

# Three groups: 20 genes x 60 samples, and a SingleCellExperiment with a PCA.
readme_data <- function() {
    set.seed(7)
    x <- do.call(cbind, lapply(c(0, 4, 8), function(m) matrix(rnorm(20 * 20, m), 20)))
    dimnames(x) <- list(paste0("g", 1:20), paste0("s", 1:60))
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = x))
    SingleCellExperiment::reducedDim(sce, "PCA") <- prcomp(t(x))$x[, 1:5]
    list(x = x, sce = sce, truth = rep(1:3, each = 20))
}

test_that("the R code of the repository README's 'R and Bioconductor' section runs", {
    skip_without_python()
    root <- repo_root()
    blocks <- r_blocks(file.path(root, "README.md"), "R and Bioconductor")
    expect_gte(length(blocks), 1L)
    expect_true(any(grepl("dpp(sce", unlist(blocks), fixed = TRUE)))
    data <- readme_data()
    env <- new.env(parent = globalenv())
    env$x <- data$x
    env$sce <- data$sce
    run_blocks(blocks, env)
    expect_identical(levels(env$res$labels)[1], "1")
    expect_gt(ari(env$res$labels, data$truth), 0.95)
    sce <- env$sce
    for (col in c("pla", "pla_confidence", "dpp", "pcc")) {
        expect_true(col %in% names(SummarizedExperiment::colData(sce)))
    }
    expect_true(all(c("scc_ensemble", "pla_membership", "pcc_membership") %in%
                    SingleCellExperiment::reducedDimNames(sce)))
    expect_identical(SingleCellExperiment::colLabels(sce), sce$pcc)
    expect_gt(ari(sce$dpp, data$truth), 0.95)
})

test_that("the R code of r_bridge/README.md runs", {
    skip_without_python()
    root <- repo_root()
    blocks <- r_blocks(file.path(root, "r_bridge", "README.md"))
    expect_gte(length(blocks), 3L)
    env <- new.env(parent = globalenv())
    run_blocks(blocks, env)
    expect_s3_class(env$res$labels, "factor")
    expect_s4_class(env$sce, "SingleCellExperiment")
    expect_true(all(c("pcc", "pla", "dpp", "label") %in%
                    names(SummarizedExperiment::colData(env$sce))))
    expect_identical(levels(env$labels)[1], "1")
    expect_equal(nrow(env$sweep$parameters), 3L)
})
