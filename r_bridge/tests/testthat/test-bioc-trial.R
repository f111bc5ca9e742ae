# A Bioconductor user's trial (sixteenth session): each defect it found, fixed.

test_that("a given ensemble is matched to the items by its row names", {
    skip_without_python()
    x <- two_groups()
    ens <- ensemble(x, nPartitions = 12, k = c(2, 4), randomState = 1)$labels
    shuffled <- ens[sample(nrow(ens)), ]
    expect_identical(pcc(x, nClusters = 2, ensemble = shuffled)$labels,
                     pcc(x, nClusters = 2, ensemble = ens)$labels)
    rownames(shuffled)[1] <- "zz"
    expect_error(pcc(x, nClusters = 2, ensemble = shuffled),
                 "ensemble's row names are not x's column names \\(e\\.g\\. 'zz'\\)")
})

test_that("a name holding another kind of record is refused before any work", {
    skip_without_python()
    sce <- ensemble(SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups())),
                    nPartitions = 12, k = c(2, 4))
    expect_error(pcc(sce, nClusters = 2, name = "scc_ensemble"),
                 "name = 'scc_ensemble' is the ensemble's name \\(ensembleKey\\)")
    res <- pcc(sce, nClusters = 2)
    expect_error(ensemble(res, name = "pcc"), "name = 'pcc' holds a pcc result")
    expect_error(pcc(sce, nClusters = 2, ensemble = SingleCellExperiment::reducedDim(sce,
                 "scc_ensemble")[, 1:5]), "x holds an ensemble at reducedDim\\(x, 'scc_ensemble'\\)")
    # the default name too (a review): pcc() would replace an ensemble stored as "pcc"
    other <- ensemble(SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups())),
                      nPartitions = 6, k = 2, name = "pcc")
    expect_error(pcc(other, nClusters = 2, ensembleKey = "pcc"),
                 "name = 'pcc' is the ensemble's name \\(ensembleKey\\)")
    S4Vectors::metadata(other)$mine <- "a note"  # a user's own entry is not replaced
    expect_error(pcc(other, nClusters = 2, ensembleKey = "pcc", name = "mine"),
                 "name = 'mine' holds an entry of metadata\\(x\\) that scconsensus did not write")
    # what a user adds to the ensemble's record does not reach Python
    S4Vectors::metadata(sce)$scc_ensemble$note <- diag(2)
    expect_s4_class(pla(sce, nClusters = 2), "SingleCellExperiment")
})

test_that("a SummarizedExperiment comes back as a SingleCellExperiment", {
    skip_without_python()
    se <- SummarizedExperiment::SummarizedExperiment(list(logcounts = two_groups()))
    res <- pcc(se, nClusters = 2, ensembleArgs = small_ensemble)
    expect_s4_class(res, "SingleCellExperiment")
    expect_identical(levels(res$pcc), c("1", "2"))
})

test_that("k = 'auto', 1-based cluster ids and names checked up front", {
    skip_without_python()
    x <- two_groups()
    expect_identical(ncol(ensemble(x, k = "auto", nPartitions = 5)$labels), 5L)
    ck <- consensusK(x, maxK = 3, reps = 5)
    expect_identical(sort(unique(attr(ck, "clusterConsensus")$cluster)), 1:3)
    colnames(x)[2] <- NA
    expect_error(pcc(x, nClusters = 2), "x has 1 missing or empty column name")
    expect_error(pcc(two_groups(), name = ""), "^name must be a non-empty string")
    expect_error(pcc(two_groups(), nNull = 1.5), "got 1\\.5\\.$")
})

test_that("clusterRows takes duplicated row names, as KmeansParam does", {
    skip_without_python()
    y <- t(two_groups())
    rownames(y) <- rep(paste0("AAAC", 1:20), 2)
    labels <- bluster::clusterRows(y, PCCParam(nClusters = 2))
    expect_identical(as.vector(table(labels, truth)[, 1] * table(labels, truth)[, 2]), c(0L, 0L))
})

test_that("nNull after the cells were put in another order", {
    skip_without_python()
    sce <- ensemble(SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups())),
                    nPartitions = 12, k = c(2, 4))
    res <- pcc(sce[, rev(seq_len(ncol(sce)))], nClusters = 2, nNull = 2)
    expect_false(is.null(S4Vectors::metadata(res)$pcc$k_null))
})

test_that("a consensusK() rerun on a SingleCellExperiment replaces every k its earlier run wrote", {
    skip_without_python()
    sce <- SingleCellExperiment::SingleCellExperiment(list(logcounts = two_groups()))
    sce <- consensusK(sce, maxK = 4, reps = 5, keepK = "all", progress = FALSE)
    expect_true(all(c("consensus_k_k4", "consensus_k_k4_confidence") %in% names(sce@colData)))
    expect_warning(sce <- consensusK(sce, maxK = 2, reps = 5, keepK = "all", progress = FALSE),
                   "removing consensus_k_k3, consensus_k_k4: results of the earlier run",
                   class = "scconsensusWarning")
    left <- c(names(SummarizedExperiment::colData(sce)), names(S4Vectors::metadata(sce)),
              SingleCellExperiment::reducedDimNames(sce))
    expect_false(any(grepl("_k[34]", left)))
    expect_true("consensus_k_k2" %in% left)
    # what the user put under a listed name since is theirs, whatever it holds (a review)
    sce <- consensusK(sce, maxK = 3, reps = 5, keepK = "all", progress = FALSE)
    S4Vectors::metadata(sce)$consensus_k_k3 <- "my note"
    sce <- suppressWarnings(consensusK(sce, maxK = 2, reps = 5, keepK = "all", progress = FALSE))
    expect_identical(S4Vectors::metadata(sce)$consensus_k_k3, "my note")
})
