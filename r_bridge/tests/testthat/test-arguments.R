test_that("vectors become tuples, lists stay lists, names are checked", {
    skip_without_python()
    args <- scconsensusR:::.py_args(list(k = c(2, 20), methods = "kmeans", ks = list(3, 5)))
    expect_equal(class(args)[1], "python.builtin.dict")
    r <- reticulate::py_to_r(args)
    expect_equal(r$methods, "kmeans")
    builtins <- reticulate::import_builtins(convert = FALSE)
    expect_equal(reticulate::py_to_r(builtins$type(args["k"])$`__name__`), "tuple")
    expect_equal(reticulate::py_to_r(builtins$type(args["ks"])$`__name__`), "list")
    expect_error(scconsensusR:::.py_args(list(1, 2)), "must be named")
})

test_that("R-style names and whole numbers reach Python as ints", {
    skip_without_python()
    bridge <- scconsensusR:::.scc_bridge()
    tl <- reticulate::import("scconsensus.tl", convert = FALSE)
    conv <- reticulate::py_to_r(bridge$encode(bridge$convert_kwargs(
        tl$ensemble,
        scconsensusR:::.py_args(list(nPartitions = 5, k = c(2, 6), subsample = 1,
                                     n.neighbors = 7, randomState = 3)))))
    expect_identical(conv$n_partitions, 5L)
    expect_identical(unlist(conv$k), c(2L, 6L))
    expect_identical(conv$n_neighbors, 7L)
    expect_identical(conv$random_state, 3L)
    expect_identical(conv$subsample, 1)  # a float parameter stays a float
    expect_error(ensemble(two_groups(), nClustres = 3),
                 "ensemble\\(\\) has no argument 'nClustres'.*nPartitions")
})
