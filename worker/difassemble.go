package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"errata/store"
	"errata/worker/dif"
)

// DifAssembler runs assemble_dif jobs: it makes an upload's chunks into one
// stored file (a list of the chunks' blobs, no byte copied), checks its
// checksum, reads the identity of the objects in it with package dif, and
// stores one debug file of the project per object. A file whose content
// contradicts the debug id it was uploaded with is refused.
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
	file, err := a.Store.PrepareFile(ctx, job.OrganizationID, job.Checksum, job.Chunks, store.FileOptions{MaxSize: maxSize})
	switch {
	case errors.Is(err, store.ErrMissingChunks):
		return badBundle("Some chunks of the file are missing: upload them first")
	case errors.Is(err, store.ErrFileTooLarge):
		return badBundle("The file is larger than the limit of %d bytes", maxSize)
	case err != nil:
		return err
	}
	if file, err = a.Store.VerifyFile(ctx, file, nil); err != nil {
		var sumErr *store.ChecksumError
		switch {
		case errors.As(err, &sumErr):
			return badBundle("Checksum mismatch: the chunks hash to %s, not %s", sumErr.Got, sumErr.Want)
		case errors.Is(err, store.ErrMissingChunks):
			return badBundle("Some chunks of the file are missing: upload them first")
		}
		return err
	}
	debugID := ""
	if job.DebugID != nil {
		debugID = *job.DebugID
	}
	objs, err := dif.ReadUpload(a.Store.ReadPendingFile(ctx, file), file.Size, job.Name, debugID)
	if ue, ok := errors.AsType[*dif.UploadError](err); ok {
		return badBundle("%s", ue.Msg)
	}
	if err != nil {
		return err
	}
	if _, err := a.Store.SaveDebugFiles(ctx, job.ProjectID, file, debugFileObjects(objs, job.Name), job.Supersede); err != nil {
		return err
	}
	return nil
}

// debugFileObjects are the store's records of objs, uploaded under name.
func debugFileObjects(objs []dif.Object, name string) []store.DebugFileObject {
	out := make([]store.DebugFileObject, len(objs))
	for i, o := range objs {
		out[i] = store.DebugFileObject{
			DebugID: o.DebugID, CodeID: o.CodeID, ObjectName: store.ObjectNameOf(name, o.Kind),
			CPUName: o.Arch, FileFormat: o.Kind, Type: o.Type, Features: o.Features,
		}
	}
	return out
}
