package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"errata/store"
	"errata/store/storetest"
)

// TestTeamsAreTheOrganizations: every team statement reaches the caller's
// organizations only, a member changes only its own links without
// MayManage, and TeamRolesOf reads the stored roles.
func TestTeamsAreTheOrganizations(t *testing.T) {
	ctx := context.Background()
	st, db := storetest.NewWithURL(t)
	users := map[string]int64{}
	for _, email := range []string{"ann@acme.example", "ben@acme.example", "rob@rival.example"} {
		id, err := st.CreateUser(ctx, email, email)
		if err != nil {
			t.Fatal(err)
		}
		users[email] = id
	}
	ann, ben, rob := users["ann@acme.example"], users["ben@acme.example"], users["rob@rival.example"]
	for org, owner := range map[string]string{"acme": "ann@acme.example", "rival": "rob@rival.example"} {
		if _, err := st.CreateOrganization(ctx, org, org, owner); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateProject(ctx, store.Operator, org, store.NewProject{Slug: "web", Name: "Web"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AddMember(ctx, "acme", "ben@acme.example", "member"); err != nil {
		t.Fatal(err)
	}
	backend, err := st.CreateTeam(ctx, ann, "acme", "backend", "Backend")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, rob, "rival", "backend", "Backend"); err != nil {
		t.Fatal(err)
	}
	benMember := int64(storetest.Count(t, db, `SELECT id FROM memberships WHERE user_id = $1`, ben))
	annMember := int64(storetest.Count(t, db, `SELECT id FROM memberships WHERE user_id = $1`, ann))
	acme := func(member int64, manage bool) store.MemberTeamChange {
		return store.MemberTeamChange{OrgSlug: "acme", MemberID: member, TeamRef: "backend", MayManage: manage}
	}

	t.Run("another organization's caller finds nothing", func(t *testing.T) {
		if _, err := st.Team(ctx, rob, "acme", "backend"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("acme's team for rob: %v", err)
		}
		if _, _, err := st.AddTeamMember(ctx, rob, acme(benMember, true)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rob puts ben on acme's team: %v", err)
		}
		rival := store.MemberTeamChange{OrgSlug: "rival", MemberID: benMember, TeamRef: "backend", MayManage: true}
		if _, _, err := st.AddTeamMember(ctx, rob, rival); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rob puts acme's ben on rival's team: %v", err)
		}
		if _, err := st.LinkProjectTeam(ctx, rob, "rival", "web", strconv.FormatInt(backend.ID, 10)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rob links acme's team by id: %v", err)
		}
		roles, err := st.TeamRolesOf(ctx, rob, "rival", []int64{annMember})
		if err != nil || len(roles) != 0 {
			t.Errorf("rob reads ann's team roles: %v %v", roles, err)
		}
	})
	t.Run("a member changes its own links only, unless it may manage", func(t *testing.T) {
		if _, _, err := st.AddTeamMember(ctx, ben, acme(annMember, false)); !errors.Is(err, store.ErrOtherMember) {
			t.Errorf("ben changes ann's link: %v", err)
		}
		if _, added, err := st.AddTeamMember(ctx, ben, acme(0, false)); err != nil || !added {
			t.Errorf("ben joins: %t %v", added, err)
		}
		if role, err := st.SetTeamRole(ctx, ann, acme(benMember, true), "admin"); err != nil || role != "admin" {
			t.Errorf("ann makes ben a team admin: %q %v", role, err)
		}
	})
	t.Run("TeamRolesOf reads the team roles Sentry answers", func(t *testing.T) {
		roles, err := st.TeamRolesOf(ctx, ann, "acme", []int64{annMember, benMember})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64][]store.MemberTeamRole{
			annMember: {{TeamSlug: "backend", Role: "admin"}}, // the creator
			benMember: {{TeamSlug: "backend", Role: "admin"}},
		}
		if diff := cmp.Diff(want, roles); diff != "" {
			t.Errorf("team roles (-want +got):\n%s", diff)
		}
	})
	t.Run("a project's teams", func(t *testing.T) {
		p, err := st.LinkProjectTeam(ctx, ben, "acme", "web", "backend")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.TeamRef{{ID: backend.ID, Slug: "backend", Name: "Backend"}}, p.Teams); diff != "" {
			t.Errorf("web's teams (-want +got):\n%s", diff)
		}
		listed, err := st.Project(ctx, ann, "acme", "web")
		if err != nil || len(listed.Teams) != 1 {
			t.Errorf("Project's teams: %v %v", listed.Teams, err)
		}
		if err := st.DeleteTeam(ctx, rob, "acme", "backend"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("rob deletes acme's team: %v", err)
		}
		if err := st.DeleteTeam(ctx, ann, "acme", "backend"); err != nil {
			t.Fatal(err)
		}
		if listed, err = st.Project(ctx, ann, "acme", "web"); err != nil || len(listed.Teams) != 0 {
			t.Errorf("web's teams after the team went: %v %v", listed.Teams, err)
		}
	})
}
