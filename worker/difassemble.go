package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"errata/store"
	"errata/worker/dif"
	"errata/worker/ingest"
)

// DifAssembler runs assemble_dif jobs: it makes an organization's chunk
// list into one stored file (a list of the chunks' blobs, no byte copied),
// hashes it once, and, for each requested file whose checksum that is,
// reads the identity of the objects in it with package dif and stores one
// debug file of the file's project per object. A file whose content
// contradicts the debug id it was uploaded with is refused; a requested
// checksum that is not the chunks' is answered from the job's result
// (store.DifAssemblyResult) without another pass.
type DifAssembler struct {
	Store *store.Store
	Log   *slog.Logger
	// MaxFileSize bounds a debug file; default DefaultMaxBundleSize.
	MaxFileSize int64
}

// Run assembles the upload described by payload (a store.DifAssemblyJob).
// Its errors are safe to show to the client: causes that are not the
// file's fault go to the log.
func (a *DifAssembler) Run(ctx context.Context, payload json.RawMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			a.Log.Error("assemble debug file: panic", "panic", p)
			err = errors.New("Internal error while assembling the debug file")
		}
	}()
	err = a.assemble(ctx, payload)
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[bundleError](err); ok {
		return err
	}
	a.Log.Warn("assemble debug file: failed", "err", err)
	return errors.New("Internal error while assembling the debug file")
}

func (a *DifAssembler) assemble(ctx context.Context, payload json.RawMessage) error {
	var job store.DifAssemblyJob
	if err := json.Unmarshal(payload, &job); err != nil {
		return Permanent(fmt.Errorf("assemble_dif payload: %w", err))
	}
	maxSize := a.MaxFileSize
	if maxSize <= 0 {
		maxSize = DefaultMaxBundleSize
	}
	file, known, err := a.Store.PrepareDifAssembly(ctx, job, store.FileOptions{MaxSize: maxSize})
	switch {
	case errors.Is(err, store.ErrMissingChunks):
		return badBundle("Some chunks of the file are missing: upload them first")
	case errors.Is(err, store.ErrFileTooLarge):
		return badBundle("The file is larger than the limit of %d bytes", maxSize)
	case err != nil:
		return err
	}
	if !known {
		// The one pass over the bytes: against the first file's checksum,
		// and when that is not it, the checksum found is the file's.
		file, err = a.Store.VerifyFile(ctx, file, nil)
		if sumErr, ok := errors.AsType[*store.ChecksumError](err); ok {
			file.SHA1, file.ID, err = sumErr.Got, 0, nil
		}
		if errors.Is(err, store.ErrMissingChunks) {
			return badBundle("Some chunks of the file are missing: upload them first")
		}
		if err != nil {
			return err
		}
	}
	result := store.DifAssemblyResult{SHA1: file.SHA1, Files: map[string]*string{}}
	seen := map[string]bool{}
	files := job.AllFiles()
	for len(files) > 0 {
		for _, f := range files {
			key := f.Key()
			if seen[key] {
				continue
			}
			seen[key] = true
			if f.Checksum != file.SHA1 {
				continue // a mismatch, which the result's checksum tells
			}
			if file.ID == 0 {
				// Stored by the save of an earlier file of this run?
				if file, err = a.Store.StoredFile(ctx, file); err != nil {
					return err
				}
			}
			detail, err := a.save(ctx, file, f)
			if err != nil {
				return err
			}
			result.Files[key] = detail
		}
		// Requests may have given the job more files while it ran.
		current, err := a.Store.RecordDifAssembly(ctx, job, result)
		if err != nil {
			return err
		}
		files = nil
		for _, f := range current {
			if !seen[f.Key()] {
				files = append(files, f)
			}
		}
	}
	return nil
}

// save reads the objects of file as f names it and stores them as debug
// files of f's project. A file that is no debug file, or contradicts f, is
// a detail for the client, not an error.
func (a *DifAssembler) save(ctx context.Context, file store.PendingFile, f store.DifJobFile) (*string, error) {
	debugID := ""
	if f.DebugID != nil {
		debugID = *f.DebugID
	}
	content := a.Store.ReadPendingFile(ctx, file)
	objs, err := dif.ReadUpload(content, file.Size, f.Name, debugID)
	if ue, ok := errors.AsType[*dif.UploadError](err); ok {
		return &ue.Msg, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := a.Store.SaveDebugFiles(ctx, f.ProjectID, file, ingest.DebugFileObjects(objs, f.Name, content, file.Size), f.Supersede); err != nil {
		return nil, err
	}
	return nil, nil
}
