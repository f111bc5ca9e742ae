# Between R objects and the AnnData the Python side works on.
#
# Matrices never go through reticulate's NumPy conversion (reticulate < 1.36
# cannot use NumPy 2): they travel as the raw bytes of their column-major
# values with their shape, and come back as plain lists (see
# scconsensus/r/_bridge.py, encode()).

# R vectors of length > 1 go to Python as tuples (e.g. k = c(2, 20), a range),
# R lists as lists (e.g. k = list(3, 5, 8), explicit values); length-1 vectors
# as scalars; matrices as byte specs (decoded to NumPy arrays in Python).
# Whole numbers are made integers on the Python side, where the Python
# signature wants an integer (reticulate sends 5 as 5.0).
.py_args <- function(args) {
    if (length(args) == 0L) return(reticulate::dict())
    if (is.null(names(args)) || any(names(args) == "")) {
        stop("All arguments passed on to scconsensus must be named.", call. = FALSE)
    }
    conv <- lapply(args, function(v) {
        if (is.factor(v)) v <- as.character(v)
        if (!is.null(dim(v)) || methods::is(v, "Matrix")) {
            return(c(.matrix_spec(v), list(matrix = TRUE)))
        }
        if (is.atomic(v) && length(v) > 1L) {
            do.call(reticulate::tuple, as.list(v))
        } else {
            v
        }
    })
    reticulate::dict(conv)
}

# A matrix as a spec for scconsensus.r._bridge.decode_matrix().
.matrix_spec <- function(m, transpose = FALSE) {
    if (methods::is(m, "sparseMatrix")) {
        m <- methods::as(methods::as(m, "CsparseMatrix"), "generalMatrix")
        if (!methods::is(m, "dgCMatrix")) m <- methods::as(m, "dMatrix")
        return(list(shape = as.list(dim(m)), i = writeBin(m@i, raw()),
                    p = writeBin(m@p, raw()), x = writeBin(as.double(m@x), raw()),
                    transpose = transpose))
    }
    m <- as.matrix(m)
    if (is.integer(m)) {
        return(list(shape = as.list(dim(m)), dtype = "int32",
                    data = writeBin(as.vector(m), raw()), transpose = transpose))
    }
    if (!is.numeric(m) && !is.logical(m)) {
        stop("x must be numeric, not ", typeof(m), ".", call. = FALSE)
    }
    list(shape = as.list(dim(m)), dtype = "float64",
         data = writeBin(as.double(m), raw()), transpose = transpose)
}

# Items x features input (as a spec) from a features x items matrix or a
# SingleCellExperiment, with the item names.
.item_matrix <- function(x, assay.type, use.dimred) {
    if (methods::is(x, "SummarizedExperiment")) {
        if (!is.null(use.dimred)) {
            if (!methods::is(x, "SingleCellExperiment") ||
                !use.dimred %in% SingleCellExperiment::reducedDimNames(x)) {
                stop("use.dimred = '", use.dimred, "' is not among reducedDimNames(x): ",
                     paste(SingleCellExperiment::reducedDimNames(x), collapse = ", "),
                     call. = FALSE)
            }
            # reducedDims hold items in rows already
            spec <- .matrix_spec(SingleCellExperiment::reducedDim(x, use.dimred))
        } else {
            available <- SummarizedExperiment::assayNames(x)
            if (!assay.type %in% available) {
                stop("assay.type = '", assay.type, "' is not among assayNames(x): ",
                     paste(available, collapse = ", "),
                     ". Pass assay.type (e.g. 'logcounts') or use.dimred (e.g. 'PCA').",
                     call. = FALSE)
            }
            spec <- .matrix_spec(
                SummarizedExperiment::assay(x, assay.type, withDimnames = FALSE),
                transpose = TRUE)
        }
        n <- ncol(x)
        names <- colnames(x)
    } else if (is.matrix(x) || methods::is(x, "Matrix")) {
        spec <- .matrix_spec(x, transpose = TRUE)
        n <- ncol(x)
        names <- colnames(x)
    } else if (is.data.frame(x)) {
        stop("x is a data.frame: convert it with as.matrix(x) (features in rows, items ",
             "in columns).", call. = FALSE)
    } else {
        stop("x must be a numeric matrix (features in rows, items in columns) or a ",
             "SingleCellExperiment, not a ", class(x)[1], ".", call. = FALSE)
    }
    list(spec = spec, n = n, names = names)
}

# R's NA marks items a partition left out; Python's ensemble uses -1.
.ensemble_spec <- function(ensemble, n) {
    if (is.null(ensemble)) return(NULL)
    ensemble <- as.matrix(ensemble)
    if (nrow(ensemble) != n) {
        stop("ensemble has ", nrow(ensemble), " rows but x has ", n,
             " items; it must be items x partitions.", call. = FALSE)
    }
    storage.mode(ensemble) <- "integer"
    ensemble[is.na(ensemble)] <- -1L
    .matrix_spec(ensemble)
}

# Inverse of encode() in scconsensus/r/_bridge.py.
.decode <- function(v) {
    if (!is.list(v)) return(v)
    nm <- names(v)
    if (!is.null(nm) && all(c("shape", "dtype", "data") %in% nm) && length(nm) == 3L) {
        data <- unlist(v$data)
        if (is.null(data)) data <- vector(if (v$dtype == "int32") "integer" else "double")
        data <- switch(v$dtype, int32 = as.integer(data), bool = as.logical(data),
                       as.double(data))
        shape <- as.integer(unlist(v$shape))
        if (length(shape) <= 1L) return(data)
        return(array(data, dim = shape))
    }
    if (!is.null(nm) && setequal(nm, c("levels", "values"))) {
        values <- vapply(v$values, function(s) if (is.null(s)) NA_character_ else s,
                         character(1))
        return(factor(values, levels = unlist(v$levels)))
    }
    if (!is.null(nm) && setequal(nm, c("columns", "index"))) {
        cols <- lapply(v$columns, .decode)
        df <- as.data.frame(cols, optional = TRUE, stringsAsFactors = FALSE)
        if (length(v$index) == nrow(df) && nrow(df) > 0L) rownames(df) <- unlist(v$index)
        return(df)
    }
    lapply(v, .decode)
}

.decode_obsm <- function(m, names) {
    m <- as.matrix(.decode(m))
    if (is.integer(m)) m[m < 0L] <- NA_integer_  # ensemble labels: -1 = not sampled
    rownames(m) <- names
    m
}
