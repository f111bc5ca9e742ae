# Access to the Python package, loaded on first use.

.scc_cache <- new.env(parent = emptyenv())

#' Is the Python package 'scconsensus' usable from R?
#'
#' 'reticulate' chooses the Python interpreter: set the environment variable
#' `RETICULATE_PYTHON` to a Python that has 'scconsensus' installed
#' (`pip install scconsensus`), or call [reticulate::use_python()] before the
#' first call of a 'scconsensusR' function.
#'
#' @return `TRUE` or `FALSE`; with `FALSE`, the reason as attribute `"reason"`.
#' @examples
#' sccAvailable()
#' @export
sccAvailable <- function() {
    ok <- tryCatch({
        .scc_bridge()
        TRUE
    }, error = function(e) structure(FALSE, reason = conditionMessage(e)))
    ok
}

.scc_bridge <- function() {
    if (is.null(.scc_cache$bridge)) {
        if (!reticulate::py_module_available("scconsensus")) {
            python <- tryCatch(reticulate::py_config()$python, error = function(e) "none found")
            stop("Python package 'scconsensus' is not available to reticulate (Python: ",
                 python, "). Install it with `pip install scconsensus` in that Python, ",
                 "or point RETICULATE_PYTHON at a Python that has it.", call. = FALSE)
        }
        .scc_cache$bridge <- reticulate::import("scconsensus.r_bridge", convert = FALSE)
    }
    .scc_cache$bridge
}

# Run a Python call; show the Python error message as an R error: without
# reticulate's traceback, the exception's class ("ValueError: ") and trailing
# blank lines.
.py_try <- function(expr) {
    tryCatch(expr, error = function(e) stop(.py_message(conditionMessage(e)), call. = FALSE))
}

.py_message <- function(msg) {
    msg <- sub("\n\nDetailed traceback:.*$", "", msg)
    msg <- sub("^[[:alpha:]_][[:alnum:]_.]*(Error|Exception|Warning): ", "", msg)
    .r_terms(trimws(msg))
}

# Python's argument names and values in a message as an R user writes them: snake_case
# names before "=", "<", ">", "must", "is" or in parentheses ("n_clusters=9",
# "(n_partitions)", "n_runs must be", "choose max_k < 32") in camelCase, and a k range
# "k=(4, 8)" as sccRange(4, 8). Quoted keys (.obsm['scc_ensemble']) stay as they are.
# Python's values and types as R's (a user trial read "None, an int, or a numpy
# Generator, got <class 'str'>" and "True or False"); choices "['a', 'b']" as c("a", "b").
.r_terms <- function(msg) {
    msg <- gsub("\\bk=\\(([0-9]+), ([0-9]+)\\)", "k = sccRange(\\1, \\2)", msg, perl = TRUE)
    msg <- gsub("\\bconsensus_k\\(\\)", "consensusK()", msg, perl = TRUE)  # R's name
    for (rule in .r_values) msg <- gsub(rule[1], rule[2], msg, perl = TRUE)
    msg <- .r_choices(msg)
    msg <- .r_positions(msg)
    arg <- "(?<!['\".])\\b[a-z][a-z0-9]*(_[a-z0-9]+)+(?=\\s*(=|\\)|<|>|must\\b|is\\b))"
    names <- gregexpr(arg, msg, perl = TRUE)
    regmatches(msg, names) <- lapply(regmatches(msg, names), .camel)
    msg
}

.r_values <- list(
    c("None, an int, or a numpy Generator", "NULL or a whole number >= 0"),
    c("\\bTrue or False\\b", "TRUE or FALSE"),
    c("<class 'str'>", "a character string"),
    c("<class 'float'>", "a number that is not whole"),
    c("<class 'int'>", "a whole number"),
    c("<class '(list|tuple)'>", "several values"),
    c("<class 'bool'>", "TRUE or FALSE"),
    c(" or a scconsensus\\.core\\.Bregman instance \\(e\\.g\\. Bregman\\.power\\(1\\.5\\)\\)", ""),
    c("'kl', 'l2'(?=\\.)", "'kl' or 'l2'"),
    # Python's advice, as an R user follows it (a user trial was told sc.pp.log1p)
    c(paste0("Build the ensemble on a representation \\(sc\\.pp\\.pca, then ",
             "tl\\.ensemble\\(adata, use_rep='X_pca'\\)\\)\\."),
      "Cluster a reduced dimension (e.g. scater::runPCA(x), then use.dimred = \"PCA\")."),
    c(paste0("Normalise and log-transform first \\(sc\\.pp\\.normalize_total, sc\\.pp\\.log1p\\), ",
             "and cluster a PCA \\(sc\\.pp\\.pca; X_pca is then used\\), or pass use_rep, or ",
             "(a|another) layer of normalised values\\."),
      paste0("Normalise and log-transform first (e.g. scuttle::logNormCounts(x), then ",
             "assay.type = \"logcounts\"), and cluster a PCA (e.g. scater::runPCA(x), then ",
             "use.dimred = \"PCA\").")),
    c("scale them first \\(sc\\.pp\\.scale\\), or cluster a representation \\(use_rep\\)",
      paste0("scale them first (e.g. t(scale(t(x))) for features in rows), or cluster a ",
             "reduced dimension (use.dimred)")),
    c("\\b(?:scc\\.|scconsensus\\.)?tl\\.(ensemble|pcc|pla|dpp)\\(adata(, )?", "\\1(x\\2"),
    c("\\b(?:scc\\.|scconsensus\\.)?tl\\.(ensemble|pcc|pla|dpp)\\b(?!\\()", "\\1()"),
    c("Look at pl\\.k_selection, and give the number of clusters if the biology sets one",
      paste0("Look at the evidence, k_selection in the result's record (metadata(x) or ",
             "$uns), and give nClusters if the biology sets one")),
    c("^tl\\.k_null: ", "nNull: "),
    c(paste0("One feature holds ([0-9.]+%) of the variance: scale the features ",
             "\\(sc\\.pp\\.scale\\) or cluster a representation \\(sc\\.pp\\.pca\\)\\."),
      paste0("One feature holds \\1 of the variance: scale the features (e.g. t(scale(t(x))) ",
             "for features in rows) or cluster a PCA (use.dimred, with a SingleCellExperiment).")),
    c(paste0("Look at (scc\\.pl\\.k_selection\\(adata, '[^']+'\\)|",
             "adata\\.uns\\['[^']+'\\]\\['k_null'\\])\\."),
      "Look at k_null in the result's record (metadata(x) or $uns)."),
    c("\\badata\\.X\\b", "x"),
    c("\\.\\.max_k\\b", "..maxK"),  # "k = 2..max_k": a range, no attribute
    c("\\bkey_added\\b(?!')", "name"),  # R's argument for Python's key_added
    c("\\bnp\\.(?:float|int)(?:16|32|64)\\(([^()]*)\\)", "\\1"),  # NumPy's repr of a number
    c("\\(\\.uns\\['[^']+'\\]\\['best_k_ties'\\] lists all\\)",
      "(the result's bestKTies lists all)"),
    c(paste0("e\\.g\\. with pl\\.consensus_cdf, or choose k with (?:tl\\.pcc|pcc\\(\\))'s ",
             "evidence \\(pl\\.k_selection\\)"),
      paste0("e.g. with plot(result, which = \"cdf\"), or choose k with pcc()'s evidence ",
             "(the k_selection of its record)")),
    c("Cluster a representation \\(e\\.g\\. a PCA\\)",
      "Cluster a reduced dimension (use.dimred = \"PCA\")"),
    c("(?<=\\w)=True\\b", " = TRUE"),
    c("(?<=\\w)=False\\b", " = FALSE")
)

# Python's 0-based positions as R counts them, 1-based (a trial read "partition 0"): a
# partition is a column of the ensemble, "row" an item and "column" a feature of the
# items-by-features matrix Python received (an item is a column of an assay in R).
.r_positions <- function(msg) {
    rules <- list(c("(?<=\\(partition )[0-9]+(?=:)", ""),
                  c("(?<=\\(e\\.g\\. )row [0-9]+", "item "),
                  c("(?<=\\()column [0-9]+(?=\\))", "feature "),
                  c("\\bn_clusters\\[[0-9]+(?=\\])", "nClusters["))
    for (rule in rules) {
        found <- gregexpr(rule[1], msg, perl = TRUE)
        regmatches(msg, found) <- lapply(regmatches(msg, found), function(hits) {
            paste0(rule[2], as.integer(sub("^.*[^0-9]", "", hits)) + 1L)
        })
    }
    msg
}

# A Python list of strings, "['dpp', 'uniform']", as R writes it: c("dpp", "uniform").
.r_choices <- function(msg) {
    # not an index: .obsm['key']
    lists <- gregexpr("(?<![\\w\\])])\\[('[^']*'(, '[^']*')*)\\]", msg, perl = TRUE)
    regmatches(msg, lists) <- lapply(regmatches(msg, lists), function(found) {
        vapply(found, function(one) {
            paste0("c(", gsub("'", "\"", substr(one, 2L, nchar(one) - 1L)), ")")
        }, "")
    })
    msg
}

# Sparse input (dgCMatrix assays) is recognised by these classes.
#' @importClassesFrom Matrix Matrix sparseMatrix CsparseMatrix dgCMatrix
NULL
